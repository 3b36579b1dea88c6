#!/usr/bin/env python3
"""baton(1), `--help` and the bash completion agree.

  - every option any `baton [command] --help` names is in the man page, and every option the man
    page names is in some --help (so neither drifts from the other);
  - every command and every option of each command's --help is offered by the completion;
  - `baton --version` prints `baton VERSION`, the version the man page is built for.
No server needed.

Usage: cli_manual.py BATON_BINARY MAN_PAGE COMPLETION_SCRIPT
"""
import re, subprocess, sys

baton, man_page, completion = sys.argv[1:4]
commands = ["run", "status", "watch", "probe", "kv", "table"]
failures = []
option = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def helptext(*args):
    return subprocess.run([baton, *args, "--help"], capture_output=True, text=True, timeout=30).stdout


per_command = {c: set(option.findall(helptext(c))) for c in commands}
in_help = set(option.findall(helptext())).union(*per_command.values())
# The roff source: `\-` is a hyphen, `\fB`-style escapes change fonts.
roff = re.sub(r"\\f[BIRP]", "", open(man_page).read()).replace("\\-", "-")
in_man = set(option.findall(roff))
for o in sorted(in_help - in_man):
    failures.append("%s is in --help but not in the man page" % o)
for o in sorted(in_man - in_help):
    failures.append("%s is in the man page but in no --help" % o)

version = subprocess.run([baton, "--version"], capture_output=True, text=True, timeout=30)
m = re.fullmatch(r"baton (\S+)\n", version.stdout)
if version.returncode != 0 or not m:
    failures.append("baton --version printed %r (exit %d)" % (version.stdout, version.returncode))
elif ('"baton %s"' % m.group(1)) not in open(man_page).read():
    failures.append("the man page is not for version %s" % m.group(1))


def complete(*words):
    line = "baton " + " ".join(words)
    script = ('source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _baton; printf "%%s\\n" "${COMPREPLY[@]}"'
              % (completion, " ".join("'%s'" % w for w in ["baton", *words]), len(words)))
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        failures.append("completing %r failed: %s" % (line, r.stderr.strip()))
    return set(r.stdout.split())


offered = complete("")
for c in commands + ["--version", "--help"]:
    if c not in offered:
        failures.append("the completion does not offer the command %s" % c)
for c, opts in per_command.items():
    first = {"kv": ["put"], "table": ["work"]}.get(c, [])
    got = complete(c, *first, "--")
    if c == "kv":
        got |= complete(c, "rm", "--") | complete(c, "get", "--")
    if c == "table":
        got |= complete(c, "status", "--")
    for o in sorted(opts - got):
        failures.append("the completion of 'baton %s' does not offer %s" % (c, o))

for f in failures:
    print("FAIL: " + f)
print("%d options in --help and the man page, %d commands completed" % (len(in_help), len(commands)))
print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
sys.exit(1 if failures else 0)
