"""Verdicts on the paper's claims from theory, simulation and real runs."""
