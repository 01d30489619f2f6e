"""Pattern memory: what an agent's one-off programs needed, remembered to nudge it to forge a
tool (ADRs 0107, 0108).

* :mod:`._extract`: capability tags of a program, from its syntax tree;
* :mod:`._memory`: ``patterns.json`` (or a list in memory without a store): the last events
  of each role, every record checked as untrusted input;
* :mod:`._prompt`: the ``<recent_patterns>`` and ``<promotion_nudge>`` blocks of a depth-0
  ``ask``/``chat``/``discuss``/``host`` prompt, bounded and inert.

The lifecycle's side (what is recorded when a call finishes, the re-ask signal, the log fields)
is :mod:`recurgent._lifecycle._patterns`.
"""
