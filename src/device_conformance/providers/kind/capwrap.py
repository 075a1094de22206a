"""A runc wrapper that drops, from each OCI spec, the capabilities the host's bounding set lacks.

Why: `docker run --privileged` asks runc for every capability up to /proc/sys/kernel/cap_last_cap
(moby 20.10 oci/caps: GetAllCapabilities), but a capability outside the bounding set cannot be raised,
so on hosts whose bounding set lacks one (these VMs lack CAP_SYS_RESOURCE) runc fails with
"unable to apply caps: operation not permitted" (runc libcontainer/capabilities). Registered as the
private dockerd's default runtime (daemon.json "runtimes" + "default-runtime", see dockerd.py), it
rewrites the bundle's config.json (`create`, `run`) or the `--process` file (`exec`), then execs the
real runc with the same arguments. Nothing is added: the container gets what the host can give.

This file runs standalone, once per runc call, under `python3 -I -S` (stdlib only, about 15 ms):
dockerd.py renders it with REAL_RUNC filled in. Keep it free of package imports.
"""

import json
import os
import sys

REAL_RUNC = "runc"

# include/uapi/linux/capability.h, numbers 0..40 (CAP_CHECKPOINT_RESTORE, Linux 5.9, is the last today).
CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
)
CAP_SETS = ("bounding", "effective", "inheritable", "permitted", "ambient")

# runc's global flags that take a value (runc main.go); the command is the first other word.
GLOBAL_VALUE_FLAGS = ("--root", "--log", "--log-format", "--criu", "--rootless")


def bounding_mask(status_text: str) -> int:
    """CapBnd of a /proc/<pid>/status text, as an int."""
    for line in status_text.splitlines():
        if line.startswith("CapBnd:"):
            return int(line.split(":", 1)[1].strip(), 16)
    raise ValueError("no CapBnd line in the status text")


def missing_from_bounding(mask: int, last_cap: int) -> list[str]:
    """Names of the capabilities 0..last_cap (what privileged mode asks for) that `mask` lacks."""
    return [CAPABILITIES[n] if n < len(CAPABILITIES) else f"CAP_{n}" for n in range(last_cap + 1) if not mask >> n & 1]


def trim_capabilities(process: dict, missing: frozenset) -> list[str]:
    """Remove `missing` from every capability set of an OCI process object; return what was removed."""
    caps = process.get("capabilities")
    removed: set[str] = set()
    if not isinstance(caps, dict):
        return []
    for name in CAP_SETS:
        values = caps.get(name)
        if isinstance(values, list):
            kept = [cap for cap in values if cap not in missing]
            removed.update(cap for cap in values if cap in missing)
            caps[name] = kept
    return sorted(removed)


def command_and_args(argv: list) -> tuple:
    """(runc command, its arguments) from runc's argv without argv[0]; (None, []) if there is none."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in GLOBAL_VALUE_FLAGS:
            index += 2
        elif word.startswith("-"):
            index += 1
        else:
            return word, argv[index + 1 :]
    return None, []


def flag_value(args: list, names: tuple) -> str | None:
    """The value of the first of `names` (`--flag VALUE`, `--flag=VALUE`, `-f VALUE`) in `args`."""
    for index, word in enumerate(args):
        if word == "--":
            return None
        for name in names:
            if word == name and index + 1 < len(args):
                return args[index + 1]
            if word.startswith(name + "="):
                return word[len(name) + 1 :]
    return None


def spec_file(argv: list, cwd: str) -> tuple:
    """(path, is a whole config.json) runc will read the capabilities from, or (None, False)."""
    command, args = command_and_args(argv)
    if command in ("create", "run"):
        bundle = flag_value(args, ("--bundle", "-b")) or cwd
        return os.path.join(bundle, "config.json"), True
    if command == "exec":
        process = flag_value(args, ("--process", "-p"))
        return (process, False) if process else (None, False)
    return None, False


def rewrite(path: str, whole_spec: bool, missing: frozenset) -> list[str]:
    """Trim the capabilities in the spec file at `path` in place (atomically); return what was removed."""
    with open(path) as file:
        spec = json.load(file)
    process = spec.get("process") if whole_spec else spec
    if not isinstance(process, dict):
        return []
    removed = trim_capabilities(process, missing)
    if removed:
        temporary = f"{path}.capwrap-{os.getpid()}"
        with open(temporary, "w") as file:
            json.dump(spec, file)
        os.replace(temporary, path)
    return removed


def host_missing() -> frozenset:
    with open("/proc/self/status") as file:
        mask = bounding_mask(file.read())
    with open("/proc/sys/kernel/cap_last_cap") as file:
        last = int(file.read())
    return frozenset(missing_from_bounding(mask, last))


def main(argv: list, real_runc: str) -> None:
    path, whole = spec_file(argv, os.getcwd())
    if path is not None:
        missing = host_missing()
        if missing:
            try:
                rewrite(path, whole, missing)
            except (OSError, ValueError) as exc:
                # runc reports the spec problem itself; say what we could not do in its stderr.
                print(f"capwrap: could not trim capabilities in {path}: {exc}", file=sys.stderr)
    os.execv(real_runc, [real_runc, *argv])


if __name__ == "__main__":
    main(sys.argv[1:], REAL_RUNC)
