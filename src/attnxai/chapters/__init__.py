"""What the chapters use to size, print and draw (no model code).

    plots | tables               the chapters' figures and token shading | tables for readers
    printforms | paper | prose | runconfig
                                 print forms of rich outputs (LaTeX) | the paper's numbers |
                                 numbers for the prose | the book's profile (ATTNXAI_PROFILE)
"""
