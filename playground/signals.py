"""What other apps may hear about runs, without playground knowing them (courses' dashboard,
snippets' saved runs).

    run_started(run, payload, who)      sent by check_start_run once the run is queued (before
                                        its commit): the request's JSON object and the person
                                        key it counts against (web/clients.py)
    run_cancelling(run, who)            sent by check_cancel_run before it cancels: a receiver
                                        refuses by raising ActionError (which the caller sees)
    run_status_changed(run_id, status, run)  sent by the recorder once the stored status moved
                                        (running, then the terminal one), after its commit;
                                        ``run``: its stored facts (models.run_facts),
                                        or None (a listener called by hand reads them)
"""

from django.dispatch import Signal

run_started = Signal()
run_cancelling = Signal()
run_status_changed = Signal()
