#!/usr/bin/env python3
"""Checks the commit messages from a recorded base commit onward.

Every commit after BASE (merges included) must have a subject of at most 72
characters and, when it has a body, a blank second line: that keeps
`git log --oneline` and every tool that shows subjects readable. Older history
is left as it is. Usage: check-commits.py [BASE] (run inside the repository).
"""
import subprocess
import sys

# The last commit before the rule took effect; only its descendants are checked.
RECORDED_BASE = "814d159c55ce58d8fe0ca2434744b2e6774036d5"
MAX_SUBJECT = 72


def git(*args):
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else RECORDED_BASE
    try:
        git("rev-parse", "--is-inside-work-tree")
    except (OSError, subprocess.CalledProcessError):
        print("check-commits: not a git clone; nothing to check")
        return 0
    # The base must be known and an ancestor: a shallow clone or a rewritten history would
    # otherwise let unchecked commits through silently.
    if subprocess.run(["git", "merge-base", "--is-ancestor", base, "HEAD"],
                      capture_output=True).returncode != 0:
        print(f"check-commits: {base[:12]} is not an ancestor of HEAD "
              "(a shallow clone? fetch the whole history)")
        return 1
    commits = git("rev-list", f"{base}..HEAD").split()
    bad = 0
    for c in commits:
        lines = git("log", "-1", "--format=%B", c).rstrip("\n").split("\n")
        subject = lines[0]
        problems = []
        if not subject.strip():
            problems.append("empty subject")
        if len(subject) > MAX_SUBJECT:
            problems.append(f"subject of {len(subject)} characters (at most {MAX_SUBJECT})")
        if len(lines) > 1 and lines[1].strip():
            problems.append("no blank line between the subject and the body")
        if problems:
            bad += 1
            print(f"{c[:12]} {subject[:60]}{'...' if len(subject) > 60 else ''}: {'; '.join(problems)}")
    print(f"check-commits: {len(commits)} commits after {base[:12]}, {bad} with a bad message")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
