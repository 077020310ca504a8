"""What the kubelet does to a container's ``command`` before the runtime starts it, for the
tests that run the Kubernetes recipe's pods without a cluster (unit and vm tiers)."""

from __future__ import annotations


def kubelet_expand(words: list[str], env: dict[str, str]) -> list[str]:
    """``words`` as the kubelet expands a container's ``command``: ``$(VAR)`` of a variable
    in ``env`` is its value (left as written when there is none), ``$$`` is ``$``, any other
    ``$`` stays (kubernetes/third_party/forked/golang/expansion/expand.go, ``Expand`` and
    ``tryReadVariableName``)."""

    def expand(text: str) -> str:
        out, i = [], 0
        while i < len(text):
            if text[i] != "$" or i + 1 == len(text):
                out.append(text[i])
                i += 1
            elif text[i + 1] == "$":
                out.append("$")
                i += 2
            elif text[i + 1] == "(" and (end := text.find(")", i + 2)) != -1:
                name = text[i + 2 : end]
                out.append(env.get(name, f"$({name})"))
                i = end + 1
            else:  # "$x" and an unclosed "$(": as written
                out.append(text[i : i + 2])
                i += 2
        return "".join(out)

    return [expand(w) for w in words]
