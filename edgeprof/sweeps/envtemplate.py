"""The older profiler's ``env.template``, read as data.

Auptimizer's Profiler ``source``-d this file in bash.  edgeprof parses the same shell
assignment syntax — ``KEY=value``, single and double quotes, backslash escapes, ``#``
comments, an optional ``export`` — and never runs it: ``$(…)``, backticks, ``$VAR`` and ``;``
stay literal text of the value, with a warning naming the key and line (and an error about
such a value says so too: the run stops before the warnings are shown).  Unknown keys are
reported (by name and line) and ignored.

Keys (the seeds' documentation): IMAGEREPO, APTREQUIREMENTS, PIPREQUIREMENTS, PRERUN, DIR,
SCRIPT, COMMAND, SAMPLETIME, OUTPUTFILE, DOCFILE, DOCKCPUS, DOCKMEMORY, DOCK_ARGS (also
spelled DOCKER_ARGS, as the old profiler's own script read it).

Paths are relative to the directory edgeprof is started in (the old profiler's rule); SCRIPT
is relative to DIR.  DOCFILE names a Dockerfile: when that file exists it supersedes the
image variables (IMAGEREPO, APTREQUIREMENTS, PIPREQUIREMENTS, PRERUN), as before, and
IMAGEREPO may then be left out.  DOCFILE itself may be left out (on any backend): the old
profiler wrote its generated Dockerfile there, edgeprof never writes it.

Each model's name in the old files is :func:`log_names`' (the old name unless two models
would share it).
"""

from __future__ import annotations

import glob
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import ConfigError
from ..measure.inputs import MIN_INTERVAL_S
from ..model import Limits
from ..names import has_control
from ..storage import read_input
from ..units import parse_duration

KEYS = (
    "IMAGEREPO",
    "APTREQUIREMENTS",
    "PIPREQUIREMENTS",
    "PRERUN",
    "DIR",
    "SCRIPT",
    "COMMAND",
    "SAMPLETIME",
    "OUTPUTFILE",
    "DOCFILE",
    "DOCKCPUS",
    "DOCKMEMORY",
    "DOCK_ARGS",
    "DOCKER_ARGS",
)
# DOCFILE is not among them, though the seeds' documentation lists it: the old profiler wrote
# the Dockerfile it generated there, edgeprof never does (the image is built from the keys and
# tagged by content) and reads it only when the file exists, so an absent DOCFILE means the
# same as an empty one (always accepted) or one naming no file, on every backend.
REQUIRED = ("IMAGEREPO", "DIR", "SCRIPT", "COMMAND", "SAMPLETIME", "OUTPUTFILE")
KEPT_AS_TEXT = "$ and ` are kept as text, never expanded"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class EnvTemplate:
    """A parsed ``env.template``; ``lines`` maps each key to its line (for messages)."""

    path: Path
    base_image: str | None
    apt: tuple[str, ...]
    pip: tuple[str, ...]
    prerun: str | None
    directory: Path
    script: str
    command: tuple[str, ...]
    interval_s: float
    output_file: Path
    dockerfile: Path | None
    """The DOCFILE, when that file exists (it then supersedes the image variables)."""
    limits: Limits
    docker_args: str | None
    warnings: tuple[str, ...] = ()
    lines: dict[str, int] = field(default_factory=dict, compare=False)
    docker_args_keys: tuple[str, ...] = ()
    """The keys that gave ``docker_args`` as the template spelled them (DOCK_ARGS,
    DOCKER_ARGS, or both when both hold it), for messages to name what the file says."""
    unexpanded: frozenset[str] = frozenset()
    """The keys whose value holds a ``$`` or a backtick (kept as text)."""

    def error(self, key: str, message: str) -> ConfigError:
        """An error about ``key``'s value found after parsing (a COMMAND not found on this
        host): ``file:line: KEY: message``, as :func:`parse`'s own, and when the value holds
        a ``$`` or a backtick, the reminder that it was not expanded (the warning saying so is
        never shown: the run stops first)."""
        line = self.lines.get(key)
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        return ConfigError(f"{where}: {key}: {message}{_unexpanded_note(key in self.unexpanded)}")

    def argv(self, model: str | None = None) -> list[str]:
        """The workload: COMMAND's words, SCRIPT, then the model as one more argument."""
        return [*self.command, self.script, *([model] if model is not None else [])]

    def host_warnings(self) -> list[str]:
        """What a run on this host (not in the described image) leaves out."""
        skipped = [
            k
            for k, v in (
                ("IMAGEREPO", self.base_image),
                ("APTREQUIREMENTS", self.apt),
                ("PIPREQUIREMENTS", self.pip),
                ("PRERUN", self.prerun),
                ("DOCFILE", self.dockerfile),
                (", ".join(self.docker_args_keys) or "DOCK_ARGS", self.docker_args),
            )
            if v
        ]
        if not skipped:
            return []
        return [
            f"{self.path}: {', '.join(skipped)} not applied: the command runs on this host "
            f"from DIR {self.directory}, with the packages installed here"
        ]

    def own_outputs(self) -> tuple[tuple[Path, str], ...]:
        """What every run writes, as (directory, file-name glob): OUTPUTFILE and each model's
        log beside it (``*_<OUTPUTFILE>``, whatever models an earlier run had)."""
        folder, name = self.output_file.parent, glob.escape(self.output_file.name)
        return ((folder, name), (folder, f"*_{name}"))

    def docfile_warnings(self) -> list[str]:
        """What a DOCFILE that exists leaves out: the keys it supersedes that are set.  An
        Auptimizer project still holds the Dockerfile the old profiler generated from them,
        so an edit of these keys would otherwise change nothing, silently."""
        if self.dockerfile is None:
            return []
        superseded = [
            k
            for k, v in (
                ("IMAGEREPO", self.base_image),
                ("APTREQUIREMENTS", self.apt),
                ("PIPREQUIREMENTS", self.pip),
                ("PRERUN", self.prerun),
                ("DIR", self.lines.get("DIR")),
            )
            if v
        ]
        if not superseded:
            return []
        line = self.lines.get("DOCFILE")
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        return [
            f"{where}: DOCFILE {self.dockerfile} exists: the image is built from it, so "
            f"{', '.join(superseded)} not applied (remove the file to build from the keys)"
        ]

    @property
    def run_name(self) -> str:
        """Label of a run without a model: the script's name without its extension."""
        return model_stem(Path(self.script).name)


def model_stem(model: str) -> str:
    """The old profiler's per-model name: the file name without its extension.

    Only a real extension is dropped (a dot, then a letter and up to 7 letters or digits), so
    ``mobilenet_v1_0.75_224`` stays whole instead of becoming ``mobilenet_v1_0``, and a name
    without any extension keeps its last character.  Capitals are kept."""
    name = model.rstrip("/").rsplit("/", 1)[-1]
    stem = re.sub(r"\.[A-Za-z][A-Za-z0-9]{0,7}$", "", name)
    return stem or name


def log_names(models: Sequence[str]) -> dict[str, str]:
    """Each model's name in the old files: its summary row and its ``<name>_<OUTPUTFILE>`` log.

    A model's name is its :func:`model_stem` (the old profiler's) when no other model of
    ``models`` has that stem.  Models whose stems agree (``m.onnx`` and ``m.tflite``;
    ``m.v1`` and ``m.v2``), which the old profiler merged into one log and two rows of one
    name, are named by their file name, extension kept (``m.onnx``, ``m.tflite``); where
    those agree too (``fp32/m.onnx``, ``int8/m.onnx``), by as many of their path's last parts
    as tell them apart, joined by ``_`` (``fp32_m.onnx``).  A name still shared (one path
    written two ways, or a name made to look like another's) gets the model's 1-based
    position in ``models`` (``m.onnx~2``).  Distinct models always get distinct names; a
    model listed twice is one model."""
    order = list(dict.fromkeys(models))
    # A name is a file-name prefix: no part may hold a "/" (the root "/" or "//" is dropped).
    parts = {m: [p for p in PurePosixPath(m).parts if "/" not in p] for m in order}
    depth = dict.fromkeys(order, 0)  # 0: the stem; n: the path's last n parts

    def named() -> dict[str, str]:
        return {
            m: "_".join(parts[m][-depth[m] :]) if depth[m] and parts[m] else model_stem(m)
            for m in order
        }

    def shared(names: dict[str, str]) -> list[str]:
        count = Counter(names.values())
        return [m for m in order if count[names[m]] > 1]

    names = named()
    while grow := [m for m in shared(names) if depth[m] < len(parts[m])]:
        for m in grow:
            depth[m] += 1
        names = named()
    while clash := shared(names):  # each pass makes the names longer: it ends
        for m in clash:
            names[m] += f"~{order.index(m) + 1}"
    return names


def model_log_path(output_file: Path, stem: str) -> Path:
    """``<model>_<OUTPUTFILE>`` beside OUTPUTFILE: the old profiler's per-model log."""
    return output_file.with_name(f"{stem}_{output_file.name}")


class _OpenQuote(ValueError):
    pass


class _Operator(ValueError):
    """An unquoted control operator (``char``), which the shell would have acted on."""

    def __init__(self, char: str) -> None:
        super().__init__(f"unquoted {char!r}: quote the value (it is read as data)")
        self.char = char


_OPERATORS = ";&|<>()"
_DQ_ESCAPES = '\\"$`\n'


def shell_words(line: str) -> list[str]:
    """Split one line into words by the POSIX shell's quoting rules, expanding nothing.

    ``#`` starts a comment only at the start of a word (``A=b#c`` is ``b#c``); an unquoted
    control operator (``;``, ``&``, ``|``, ``<``, ``>``, parentheses) is refused, because the
    shell would have run what follows it; ``$``, ``$(…)`` and backticks are kept as text."""
    words: list[str] = []
    word: list[str] | None = None
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c in " \t":
            if word is not None:
                words.append("".join(word))
                word = None
            i += 1
            continue
        if c == "#" and word is None:
            break
        if word is None:
            word = []
        if c == "\\":
            if i + 1 < n:
                word.append(line[i + 1])
            i += 2
        elif c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise _OpenQuote("unterminated quote")
            word.append(line[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            while True:
                if i >= n:
                    raise _OpenQuote("unterminated quote")
                d = line[i]
                if d == '"':
                    i += 1
                    break
                if d == "\\" and i + 1 < n and line[i + 1] in _DQ_ESCAPES:
                    word.append(line[i + 1])
                    i += 2
                else:
                    word.append(d)
                    i += 1
        elif c in _OPERATORS and not (c == "(" and "".join(word).endswith("$")):
            raise _Operator(c)
        elif c == "$" and line.startswith("$(", i):
            end = line.find(")", i)
            if end < 0:
                raise ValueError("unquoted '$(' without ')': quote the value")
            word.append(line[i : end + 1])
            i = end + 1
        else:
            word.append(c)
            i += 1
    if word is not None:
        words.append("".join(word))
    return words


def read_assignments(path: Path) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """``KEY → (value, line)`` and warnings, from shell-style assignment lines.

    A quoted value may span lines (as in the shell); every other malformed line is a
    :class:`ConfigError` naming ``path:line``.
    """
    text = read_input(path, "environment file ")
    values: dict[str, tuple[str, int]] = {}
    warnings: list[str] = []
    pending, start = "", 0
    # Lines end at "\n" only, as the shell reads them (a CR before it is dropped: a file
    # saved on Windows still reads); splitlines() would also end one inside a quoted value
    # at U+2028, a form feed or a NEL, and give the value a newline the file does not have.
    lines = [ln.removesuffix("\r") for ln in text.split("\n")]
    for number, line in enumerate(lines, 1):
        if not pending:
            start = number
        chunk = pending + line
        if chunk.endswith("\\") and not chunk.endswith("\\\\"):
            pending = chunk[:-1]  # a continuation line, as in the shell
            continue
        try:
            words = shell_words(chunk)
        except _OpenQuote:  # the value goes on on the next line, as in the shell
            pending = chunk + "\n"
            continue
        except ValueError as exc:
            raise ConfigError(f"{path}:{start}: {exc}") from None
        pending = ""
        if not words:
            continue
        if words[0] == "export" and len(words) > 1:
            words = words[1:]
        where = f"{path}:{start}"
        key, sep, value = words[0].partition("=")
        if not sep or not _NAME.fullmatch(key):
            raise ConfigError(f"{where}: expected KEY=value, got {chunk.strip()!r}")
        if len(words) > 1:
            raise ConfigError(f'{where}: {key}: the value holds unquoted spaces: write {key}="…"')
        if key not in KEYS:
            warnings.append(f"{where}: unknown key {key} ignored")
            continue
        if key in values:
            warnings.append(f"{where}: {key} set again (line {values[key][1]}): the last wins")
        if _has_expansion(value):
            warnings.append(f"{where}: {key}: {KEPT_AS_TEXT}")
        values[key] = (value, start)
    if pending:
        raise ConfigError(f"{path}:{start}: unterminated quote")
    return values, warnings


def _has_expansion(value: str) -> bool:
    return "$" in value or "`" in value


def _unexpanded_note(has: bool) -> str:
    return f" ({KEPT_AS_TEXT}: the file is read as data, not sourced)" if has else ""


def parse(path: Path, cwd: Path | None = None) -> EnvTemplate:
    """Read and validate ``path``; relative paths resolve against ``cwd`` (default: the
    current directory).  Every problem is a :class:`ConfigError` naming the file and line."""
    base = cwd or Path.cwd()
    values, warnings = read_assignments(path)

    def get(key: str) -> str:
        return values[key][0] if key in values else ""

    def at(key: str) -> str:
        return f"{path}:{values[key][1]}" if key in values else str(path)

    def fail(key: str, message: str) -> ConfigError:
        """``file:line: message`` about ``key``'s value; an error about a ``$VAR`` kept as
        text says so, since the warning that would have said it is not shown."""
        return ConfigError(f"{at(key)}: {message}{_unexpanded_note(_has_expansion(get(key)))}")

    docfile_value = get("DOCFILE")
    dockerfile = None
    if docfile_value:
        candidate = base / docfile_value
        if candidate.is_file():
            dockerfile = candidate
    required = [k for k in REQUIRED if not (k == "IMAGEREPO" and dockerfile is not None)]
    missing = [k for k in required if k not in values]
    if missing:  # a key not in the file has no line: the file is named
        keys = "keys" if len(missing) > 1 else "key"
        raise ConfigError(f"{path}: required {keys} {', '.join(missing)} missing")
    empty = [k for k in required if not get(k).strip()]
    if empty:
        raise ConfigError(f"{at(empty[0])}: required key {empty[0]} is empty")

    directory = base / get("DIR")
    if not directory.is_dir():
        raise fail("DIR", f"DIR {get('DIR')!r}: no such directory")
    script = get("SCRIPT")
    if has_control(script):  # it had been refused later as "--name", not named as SCRIPT
        raise fail("SCRIPT", f"SCRIPT {script!r}: contains a control character")
    if Path(script).is_absolute() or ".." in Path(script).parts:
        raise fail("SCRIPT", f"SCRIPT {script!r}: must name a file inside DIR")
    if not (directory / script).is_file():
        raise fail("SCRIPT", f"SCRIPT {script!r} not found in DIR {directory}")
    try:
        command = tuple(shell_words(get("COMMAND")))
    except _Operator as exc:
        # The value itself was quoted (the file's line parsed): what is refused is the
        # operator inside it, which the old profiler's shell would have acted on.
        raise fail(
            "COMMAND",
            f"COMMAND: {exc.char!r} refused: COMMAND is run without a shell "
            f"(its words, then SCRIPT), so the {exc.char!r} would be an argument, not the "
            "shell's operator; put the commands in a shell script and name it in SCRIPT, "
            "with COMMAND=sh",
        ) from exc
    except ValueError as exc:
        raise fail("COMMAND", f"COMMAND: {exc}") from exc
    try:
        interval = parse_duration(get("SAMPLETIME").strip(), "SAMPLETIME")
    except ConfigError as exc:
        raise fail("SAMPLETIME", str(exc)) from exc
    if interval < MIN_INTERVAL_S:  # else refused by the runner, without the file's line
        raise fail("SAMPLETIME", f"SAMPLETIME {interval:g}s is below the minimum of 1ms")

    def limit(key: str) -> str | None:
        return get(key).strip() or None

    try:
        cpus = Limits(cpus=limit("DOCKCPUS"))
    except ConfigError as exc:
        raise fail("DOCKCPUS", f"DOCKCPUS: {exc}") from exc
    try:
        memory = Limits(memory=limit("DOCKMEMORY"))
    except ConfigError as exc:
        raise fail("DOCKMEMORY", f"DOCKMEMORY: {exc}") from exc

    dock, docker = get("DOCK_ARGS").strip(), get("DOCKER_ARGS").strip()
    if dock and docker and dock != docker:
        raise ConfigError(
            f"{at('DOCKER_ARGS')}: DOCK_ARGS and DOCKER_ARGS are both set and differ: keep one"
        )
    output = get("OUTPUTFILE").strip()
    if has_control(output):
        raise fail("OUTPUTFILE", f"OUTPUTFILE {output!r}: contains a control character")
    if (
        PurePosixPath(output).is_absolute()
        or ".." in PurePosixPath(output).parts
        or PurePosixPath(output).name in ("", ".")
        or output.endswith("/")
    ):
        # A colleague's template is not trusted with a path (docs/reliability.md): an
        # absolute or ../ OUTPUTFILE had a summary appended to any file the user could write.
        raise fail(
            "OUTPUTFILE",
            f"OUTPUTFILE {output!r}: must name a file inside the directory edgeprof is "
            "started in (the old profiler's: a file name, as out.txt)",
        )
    if "/" in output.rstrip("/") and not (base / output).parent.is_dir():
        raise fail("OUTPUTFILE", f"OUTPUTFILE {output!r}: no such directory")
    return EnvTemplate(
        path=path,
        base_image=get("IMAGEREPO").strip() or None,
        apt=tuple(get("APTREQUIREMENTS").split()),
        pip=tuple(get("PIPREQUIREMENTS").split()),
        prerun=get("PRERUN").strip() or None,
        directory=directory,
        script=script,
        command=command,
        interval_s=interval,
        output_file=base / output,
        dockerfile=dockerfile,
        limits=Limits(cpus=cpus.cpus, memory=memory.memory),
        docker_args=dock or docker or None,
        warnings=tuple(warnings),
        lines={k: v[1] for k, v in values.items()},
        docker_args_keys=tuple(k for k, v in (("DOCK_ARGS", dock), ("DOCKER_ARGS", docker)) if v),
        unexpanded=frozenset(k for k, (v, _) in values.items() if _has_expansion(v)),
    )
