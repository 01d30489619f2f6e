"""Governance: proposals, who may decide them, and what an applied proposal changes.

The room behind the Agent's reserved methods ``propose``, ``proposals``, ``proposal``,
``approve_proposal``, ``reject_proposal`` and ``apply_proposal`` and the ``recurgent proposals``
command (ADRs 0086-0088):

* ``_proposals``: the proposals book, ``proposals.json`` under the store root (or in memory);
* ``_authority``: who acts, and whether they may enact;
* ``_apply``: what applying each proposal type changes (a dispatch table);
* ``_role_profiles``: the contract the role-profile mutations go through, over the role-profile
  room (the agent's binding, the store's registry);
* ``_desk``: the six operations as Outcomes;
* ``_wiring``: an agent's desk;
* ``_cli``: ``recurgent proposals``.

This package file imports nothing, so ``_agent_state`` can name the desk without a cycle.
"""
