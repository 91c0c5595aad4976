"""Durable memory: namespaced nodes that reach a model only after someone activated them.

A durable mount holds, per namespace ``(tenant, principal, scope)``, one file per
node. Change sets of 1-128 operations are staged against one snapshot with the
transition and graph rules of :mod:`gitmem.durable.rules` and land as one commit.
Recall reads active nodes only.
"""
