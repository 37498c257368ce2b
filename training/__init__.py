"""Fitting and training the models the answer step ships: the answer model
(``rag_app/answer/answer_model_e5.json``, ``answer_model.json``) and the cross reader, and the
research behind them. A developer's tool beside ``benchmarks/``, not part of the runtime: it
imports ``rag_app``, ``rag_app`` never imports it, and the ``rag_app`` wheel does not ship it (the
model files and the code that loads them stay in ``rag_app/answer/``). Run it from a checkout with
the ``train`` extra: ``python -m training --help``.
"""
