"""The editor's analyser: completion, signature help and docs on hover for the code in an
editor, answered in the environment the runs use (so for the libraries and versions a run of it
would get). ``engine`` is jedi over the code as text (none of it runs); ``__main__`` is the
process that serves it, one request per line on stdin; ``service`` keeps such processes warm on
an executor node and answers the web side's requests through Redis."""
