"""What other apps may hear about runs, without playground knowing them (courses' dashboard).

    run_status_changed(run_id, status)  sent by the recorder once the stored status moved
                                        (running, then the terminal one), after its commit
"""

from django.dispatch import Signal

run_status_changed = Signal()
