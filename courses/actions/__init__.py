"""State changes of courses, by resource, as ``playground.actions``: ``courses`` (create,
archive), ``members`` (joins, join links, members, invitations, removals), ``assignments``
(their fields, create, update, validation) and ``submissions`` (course runs, submissions,
regrades); ``common`` holds what they share. Callers import the module they need.

``check_*`` validates and raises ``ActionError``; ``do_*`` changes state without validating.
Callers have already checked access (``courses.access``): a check that needs a role takes what
the role gives (an instructor's course, a member's assignment). Dashboard updates are sent on
commit (``courses.dashboard.broadcast_on_commit``); what happens to a submission once queued is
in ``courses.grading``."""
