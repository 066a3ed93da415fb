"""What the chapters use to size, print and draw (no model code).

    agreement | faithfulness | limitstudy | toymodels
                                 reading chapter 9's agreement study | chapter 7's faithfulness
                                 study and the kinds of score it sorts the explainers into |
                                 chapter 6's LIME-limit study | chapter 5's toy classifiers
    plots | tables               the chapters' figures and token shading | tables for readers
    printforms | paper | prose | runconfig
                                 print forms of rich outputs (LaTeX) | the paper's numbers |
                                 numbers for the prose | the book's profile (ATTNXAI_PROFILE)
"""
