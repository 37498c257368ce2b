"""Evaluation: question sets, hit rules and metrics, runners and reports."""
