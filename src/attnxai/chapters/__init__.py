"""What the chapters use to print and draw (no model code).

    agreement | faithfulness | limitstudy | toymodels
                                 reading chapter 9's agreement study | chapter 7's faithfulness
                                 study and the kinds of score it sorts the explainers into |
                                 chapter 6's LIME-limit study | chapter 5's toy classifiers
    plots | tables               the chapters' figures | tables for readers
    printforms | paper | prose   print forms of rich outputs (LaTeX), installed in IPython |
                                 the paper's numbers | numbers for the prose
    latex_tables | latex_maths   a table's LaTeX | a SymPy expression broken over lines
    page                         the widths they fit (the PDF's line, a phone's column)

Token shading (Figure 1) is :mod:`attnxai.shading`; the session's profile and seed, and the
sample sizes they imply (``session.sized(paper=..., quick=...)``), are
:class:`attnxai.settings.Session`, which a chapter's launch cell returns.
"""
