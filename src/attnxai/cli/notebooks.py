"""The ``notebooks`` command: the chapters as Jupyter notebooks."""

from __future__ import annotations

import argparse

def _notebooks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default=".", help="the repository (default: the current folder)")
    p.add_argument("--out", default=None,
                   help="folder for the notebooks (default: beside each chapter that has a "
                        "launch cell, i.e. the .ipynb that Colab opens)")
    p.add_argument("--student", action="store_true",
                   help="student edition: no solutions (use with --out, or --in-place)")
    p.add_argument("--in-place", action="store_true",
                   help="with --student: strip the solutions from the chapters themselves "
                        "(.md and .ipynb), as the deploy workflow does on its own checkout for "
                        "the student branch; not for a working copy you keep")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a .ipynb beside a chapter is missing or stale")
    p.add_argument("--launch-cells", action="store_true",
                   help="first make every chapter's first code cell the launch cell for "
                        "_config.yml's repository (inserted or updated)")


def _notebooks_run(args: argparse.Namespace) -> int:
    from .. import course

    if args.in_place:
        if not args.student or args.out is not None:
            raise ValueError("--in-place goes with --student and without --out")
        for path in course.make_student_tree(args.root):
            print(path)
        return 0
    if args.student and args.out is None:
        raise ValueError("--student needs --out or --in-place (the .ipynb beside the chapters "
                         "keep the solutions)")
    if args.check:
        stale = course.stale_notebooks(args.root)
        for line in stale:
            print(line)
        if stale:
            print("run `python -m attnxai notebooks` (or `make notebooks`) to update them")
        return 1 if stale else 0
    if args.launch_cells:
        url = course.repository_url(args.root)
        for md in course.chapters(args.root):
            if course.set_launch_cell(md, url):
                print(f"{md}: launch cell for {url}")
    for path in course.write_notebooks(args.out, root=args.root, student=args.student):
        print(path)
    return 0


