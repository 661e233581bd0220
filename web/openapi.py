"""The OpenAPI 3.1 description of the public HTTP API, served at /api/openapi.json. Tests check
that every path here is routed and that responses match these shapes."""

from __future__ import annotations

from django.conf import settings

from accounts.actions import DRAFT_KEY, DRAFT_TITLE_MAX
from executor import events as ev
from executor.registry import DEVICE_PATTERN as _DEVICE_PATTERN

DEVICE_PATTERN = _DEVICE_PATTERN.pattern
# A kind (cpu, gpu, tpu) or a specific device kind of one, as workers advertise it (gpu:h200).
DEVICE = {"type": "string", "pattern": DEVICE_PATTERN,
          "description": "A device kind (cpu, gpu, tpu) or a specific device kind of one (gpu:h200)"}


def _error(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _json(ref: str, description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


SLUG = {"name": "slug", "in": "path", "required": True, "schema": {"type": "string"}}
RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}


def schema() -> dict:
    kinds = list(settings.RUN_DEVICE_KINDS)
    nullable_num = {"type": ["number", "null"]}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "JAX Playground API",
            "version": "1",
            "description": "Run NumPy/JAX snippets on remote executors. Live events of a run stream "
                           "over the websocket /ws/runs/{id}/?after={seq}.",
        },
        "paths": {
            "/api/devices": {"get": {
                "summary": "Device kinds and their live availability",
                "operationId": "listDevices",
                "responses": {"200": _json("DeviceList", "Every known device kind")},
            }},
            "/api/runs": {"post": {
                "summary": "Start a run",
                "operationId": "startRun",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/RunRequest"}}}},
                "responses": {
                    "201": _json("RunSummary", "The run was queued"),
                    "400": _error("Bad input: malformed JSON, missing or non-string code, code too large, "
                                  "unknown device"),
                    "415": _error("The body is not JSON"),
                    "429": _error("Too many runs from this client; see Retry-After"),
                    "503": _error("No executor of that kind is online"),
                },
            }},
            "/api/runs/{run_id}": {"get": {
                "summary": "A run's status and its events so far, a page at a time",
                "operationId": "getRun",
                "parameters": [
                    RUN_ID,
                    {"name": "after", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 0, "default": 0},
                     "description": "Only events with a larger seq (the previous page's events_next)"},
                    {"name": "limit", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 1},
                     "description": "Events per page, at most RUN_EVENTS_PAGE (1000 by default)"},
                ],
                "responses": {"200": _json("RunDetail", "The run"), "400": _error("A bad after or limit"),
                              "404": _error("No such run")},
            }},
            "/api/runs/{run_id}/cancel": {"post": {
                "summary": "Cancel a queued or running run",
                "operationId": "cancelRun",
                "parameters": [RUN_ID],
                "responses": {
                    "202": _json("CancelResult", "Cancelled, or cancelling within a second"),
                    "404": _error("No such run"),
                    "409": _error("The run already finished"),
                },
            }},
            "/api/snippets": {"post": {
                "summary": "Share code as an immutable snippet (the same content gives the same slug)",
                "operationId": "createSnippet",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/SnippetRequest"}}}},
                "responses": {"201": _json("SnippetCreated", "A new snippet"),
                              "200": _json("SnippetCreated", "This content was shared before: its snippet"),
                              "400": _error("Bad input"), "403": _error("CSRF check failed (cookie sessions)"),
                              "429": _error("Too many snippets from this client or account; see Retry-After")},
            }},
            "/api/snippets/{slug}": {"get": {
                "summary": "A snippet: code, title, description, versions, parent and forks, its saved run",
                "operationId": "getSnippet",
                "parameters": [SLUG],
                "responses": {"200": _json("Snippet", "The snippet"), "404": _error("No such snippet"),
                              "410": _error("Removed by the staff")},
            }},
            "/api/me/snippets": {"get": {
                "summary": "Your snippets (signed in, or a token), newest first; q searches",
                "operationId": "listMySnippets",
                "parameters": [{"name": "q", "in": "query", "required": False, "schema": {"type": "string"}},
                               {"name": "page", "in": "query", "required": False,
                                "schema": {"type": "integer", "minimum": 1}}],
                "responses": {"200": _json("SnippetList", "One page"), "401": _error("Not signed in")},
            }},
            "/api/me/snippets/{slug}": {"delete": {
                "summary": "Delete one of your snippets: off your list and search engines; its link still works",
                "operationId": "deleteMySnippet",
                "parameters": [SLUG],
                "responses": {"204": {"description": "Deleted"}, "401": _error("Not signed in"),
                              "404": _error("No such snippet of yours")},
            }},
            "/api/me/tokens": {
                "get": {"summary": "Your API tokens (without their secrets)", "operationId": "listTokens",
                        "responses": {"200": {"description": "The tokens"}, "401": _error("Not signed in")}},
                "post": {"summary": "Create a personal API token (from a signed-in session); it lasts until "
                                    "revoked, or expires_in_days; a password change revokes every token",
                         "operationId": "createToken",
                         "requestBody": {"required": False, "content": {"application/json": {"schema": {
                             "type": "object", "properties": {
                                 "name": {"type": "string", "maxLength": 100},
                                 "expires_in_days": {"type": ["integer", "null"], "minimum": 1,
                                                     "maximum": 3650}}}}}},
                         "responses": {"201": _json("TokenCreated", "The token, shown once"),
                                       "401": _error("Not signed in"),
                                       "403": _error("Tokens cannot create tokens; CSRF check failed")}},
            },
            "/api/me/tokens/{token_id}": {"delete": {
                "summary": "Revoke one of your tokens", "operationId": "revokeToken",
                "parameters": [{"name": "token_id", "in": "path", "required": True,
                                "schema": {"type": "string", "format": "uuid"}}],
                "responses": {"204": {"description": "Revoked"}, "404": _error("No such token of yours")},
            }},
            "/api/format": {"post": {
                "summary": "Format code with ruff's formatter (%-magics and !-lines kept as they are)",
                "operationId": "formatCode",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["code"],
                    "properties": {"code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES}}}}}},
                "responses": {"200": {"description": "The formatted code", "content": {"application/json": {
                    "schema": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
                              "400": _error("Malformed"), "413": _error("Too long"),
                              "422": _error("Not valid Python (the message names the line)"),
                              "429": _error("Too many requests")},
            }},
            "/api/me/drafts": {"get": {
                "summary": "Your drafts: the code you are working on, kept for another browser",
                "operationId": "listDrafts",
                "responses": {"200": _json("DraftList", "Newest first"), "401": _error("Not signed in")},
            }},
            "/api/me/drafts/{key}": {
                "parameters": [{"name": "key", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": DRAFT_KEY.pattern},
                                "description": "own, example:<slug> or snippet:<slug>"}],
                "put": {"summary": "Save a draft (replacing the one with this key)", "operationId": "saveDraft",
                        "requestBody": {"required": True, "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/DraftRequest"}}}},
                        "responses": {"200": _json("Draft", "Saved"), "400": _error("Malformed"),
                                      "401": _error("Not signed in"), "404": _error("Not a draft's key"),
                                      "413": _error("The code is too long")}},
                "delete": {"summary": "Delete a draft", "operationId": "deleteDraft",
                           "responses": {"204": {"description": "Deleted"}, "404": _error("No such draft of yours")}},
            },
            **_course_paths(),
            "/api/openapi.json": {"get": {
                "summary": "This document",
                "operationId": "getOpenApi",
                "responses": {"200": {"description": "OpenAPI 3.1",
                                      "content": {"application/json": {"schema": {"type": "object"}}}}},
            }},
        },
        "components": {"securitySchemes": {
            "token": {"type": "http", "scheme": "bearer",
                      "description": "A personal API token (POST /api/me/tokens or the account page)"},
            "session": {"type": "apiKey", "in": "cookie", "name": "sessionid",
                        "description": "A signed-in browser; unsafe methods also need X-CSRFToken"},
        }, "schemas": {
            "Error": {"type": "object", "required": ["error"],
                      "properties": {"error": {"type": "string"}}},
            "DraftRequest": {"type": "object", "required": ["code"], "properties": {
                "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
                "title": {"type": "string", "maxLength": DRAFT_TITLE_MAX},
            }},
            "Draft": {"type": "object", "required": ["key", "title", "code", "updated_at"], "properties": {
                "key": {"type": "string"}, "title": {"type": "string"}, "code": {"type": "string"},
                "updated_at": {"type": "string", "format": "date-time"},
            }},
            "DraftList": {"type": "object", "required": ["drafts"], "properties": {
                "drafts": {"type": "array", "items": {"$ref": "#/components/schemas/Draft"}},
            }},
            "RunRequest": {"type": "object", "required": ["code"], "properties": {
                "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES,
                         "description": f"At most {settings.RUN_MAX_CODE_BYTES} bytes of UTF-8"},
                "device": {"type": "string", "pattern": DEVICE_PATTERN, "default": settings.RUN_DEFAULT_DEVICE,
                           "description": "A kind (cpu, gpu, tpu), or a specific device kind of one (gpu:h200, "
                                          "as GET /api/devices lists them); 503 when none is online"},
                "snippet": {"type": "string", "description": "The slug of the snippet this code comes from: a "
                            "snippet shared unrun keeps its first run as its saved output"},
            }},
            "SnippetRequest": {"type": "object", "required": ["code"], "properties": {
                "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
                "title": {"type": "string", "maxLength": 200},
                "description": {"type": "string", "maxLength": 10000, "description": "Markdown"},
                "device": DEVICE,
                "run": {"type": "string", "format": "uuid",
                        "description": "The run it is shared from (kept when its code and device are these)"},
                "parent": {"type": "string", "description": "The slug of the snippet this one was forked from"},
            }},
            "SnippetCreated": {"type": "object", "required": ["slug", "url", "created"], "properties": {
                "slug": {"type": "string"}, "url": {"type": "string", "format": "uri"},
                "created": {"type": "boolean"}, "run": {"type": ["string", "null"]},
            }},
            "SnippetSummary": {"type": "object", "required": ["slug", "url", "title", "device", "created_at"],
                               "properties": {
                "slug": {"type": "string"}, "url": {"type": "string"}, "title": {"type": "string"},
                "device": DEVICE, "created_at": {"type": "string", "format": "date-time"},
                "first_line": {"type": "string"},
            }},
            "Snippet": {"allOf": [{"$ref": "#/components/schemas/SnippetSummary"}, {
                "type": "object",
                "required": ["code", "description", "jax_version", "parent", "forks", "run", "links"],
                "properties": {
                    "code": {"type": "string"}, "description": {"type": "string"},
                    "description_html": {"type": "string", "description": "The description rendered, without raw HTML"},
                    "options": {"type": "object"},
                    "jax_version": {"type": ["string", "null"]}, "jaxlib_version": {"type": ["string", "null"]},
                    "owner": {"type": ["string", "null"]},
                    "parent": {"oneOf": [{"$ref": "#/components/schemas/SnippetSummary"}, {"type": "null"}]},
                    "forks": {"type": "array", "items": {"$ref": "#/components/schemas/SnippetSummary"}},
                    "forks_count": {"type": "integer"},
                    "run": {"oneOf": [{"$ref": "#/components/schemas/RunDetail"}, {"type": "null"}],
                            "description": "The saved run with (a page of) its events"},
                    "links": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            }]},
            "SnippetList": {"type": "object", "required": ["snippets", "next_page"], "properties": {
                "snippets": {"type": "array", "items": {"$ref": "#/components/schemas/SnippetSummary"}},
                "next_page": {"type": ["integer", "null"]},
            }},
            "TokenCreated": {"type": "object", "required": ["id", "token", "name", "prefix", "created_at"],
                             "properties": {
                "id": {"type": "string", "format": "uuid"}, "token": {"type": "string", "description": "Shown once"},
                "name": {"type": "string"}, "prefix": {"type": "string"},
                "created_at": {"type": "string", "format": "date-time"},
                "expires_at": {"type": ["string", "null"], "format": "date-time"},
            }},
            "RunSummary": {"type": "object", "required": ["id", "status", "device", "ws"], "properties": {
                "id": {"type": "string", "format": "uuid"},
                "status": {"type": "string", "enum": list(ev.STATUSES)},
                "device": {"type": "string", "pattern": DEVICE_PATTERN,
                           "description": "What the run asked for: a kind (cpu, gpu, tpu) or a specific "
                                          "device kind of one (gpu:h200)"},
                "ws": {"type": "string", "description": "Websocket path of the run's events"},
            }},
            "RunDetail": {"allOf": [{"$ref": "#/components/schemas/RunSummary"}, {
                "type": "object",
                "required": ["created_at", "events"],
                "properties": {
                    "message": {"type": "string"},
                    "worker": {"type": "string"},
                    "ran_on": {"type": "string", "description": "The device string of the worker it ran on "
                                                                "(gpu:h200); empty before it started"},
                    "device_kind": {"type": "string", "description": "The device kind jax named (NVIDIA H200)"},
                    "code": {"type": "string"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "started_at": {"type": ["string", "null"], "format": "date-time"},
                    "finished_at": {"type": ["string", "null"], "format": "date-time"},
                    "wall_ms": nullable_num, "cpu_ms": nullable_num,
                    "peak_memory_kb": {"type": ["integer", "null"]},
                    "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"},
                               "description": "One page of the run's events, in seq order"},
                    "events_next": {"type": ["integer", "null"],
                                    "description": "Pass as ?after= for the next page; null on the last"},
                },
            }]},
            "CancelResult": {"type": "object", "required": ["id", "status"], "properties": {
                "id": {"type": "string", "format": "uuid"},
                "status": {"type": "string", "enum": list(ev.STATUSES)},
            }},
            "Event": {"type": "object", "required": ["seq", "type"], "properties": {
                "seq": {"type": "integer", "minimum": 1},
                "type": {"type": "string", "enum": list(ev.EVENT_TYPES)},
            }, "additionalProperties": True},
            "Device": {"type": "object", "required": ["kind", "online", "workers", "queue_depth"], "properties": {
                "kind": {"type": "string", "enum": kinds},
                "online": {"type": "boolean"},
                "workers": {"type": "integer"},
                "slots": {"type": "integer"},
                "busy": {"type": "integer"},
                "warm_runners": {"type": "integer"},
                "pool_size": {"type": "integer"},
                "platform": {"type": ["string", "null"]},
                "device_kind": {"type": ["string", "null"]},
                "device_count": {"type": ["integer", "null"]},
                "jax_version": {"type": ["string", "null"]},
                "libraries": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "Libraries importable in runs, with their versions"},
                "sandboxed": {"type": ["boolean", "null"]},
                "queue_depth": {"type": "integer", "description": "Runs waiting in the kind's own queue"},
                "free_runners": {"type": "integer", "description": "Slots not running a run now"},
                "memory_bytes": {"type": ["integer", "null"],
                                 "description": "Memory of one device (a GPU's or TPU's; on CPU the host's)"},
                "jaxlib_version": {"type": ["string", "null"]},
                "specific": {"type": "array", "description": "The specific device kinds online (gpu:h200)",
                             "items": {"type": "object", "required": ["device", "workers", "queue_depth"],
                                       "properties": {
                    "device": {"type": "string", "pattern": DEVICE_PATTERN},
                    "workers": {"type": "integer"}, "slots": {"type": "integer"}, "busy": {"type": "integer"},
                    "free_runners": {"type": "integer"}, "queue_depth": {"type": "integer"},
                    "platform": {"type": ["string", "null"]}, "device_kind": {"type": ["string", "null"]},
                    "device_count": {"type": ["integer", "null"]}, "memory_bytes": {"type": ["integer", "null"]},
                    "jax_version": {"type": ["string", "null"]}, "jaxlib_version": {"type": ["string", "null"]},
                }}},
            }},
            **_course_schemas(),
            "DeviceList": {"type": "object", "required": ["devices", "server_time"], "properties": {
                "devices": {"type": "array", "items": {"$ref": "#/components/schemas/Device"}},
                "server_time": {"type": "number",
                                "description": "The server's clock, Unix seconds (events' ts are on it)"}}},
        }},
    }


# Courses ------------------------------------------------------------------------------------------

def _id_param(name: str, what: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1},
            "description": f"The {what}'s id (a non-member gets 404, as for one that does not exist)"}


COURSE_ID = _id_param("course_id", "course")
ASSIGNMENT_ID = _id_param("assignment_id", "assignment")
SUBMISSION_ID = _id_param("submission_id", "submission")
NOT_FOUND = "No such course, or you are not a member (or not its instructor, for what only instructors use)"


def _body(ref: str) -> dict:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def _course_paths() -> dict:
    return {
        "/api/courses": {
            "get": {"summary": "Your courses (taught and taken)", "operationId": "listCourses",
                    "responses": {"200": _json("CourseList", "Newest first"), "401": _error("Not signed in")}},
            "post": {"summary": "Create a course: you are its instructor; it gets a join code and link",
                     "operationId": "createCourse", "requestBody": _body("CourseRequest"),
                     "responses": {"201": _json("CourseCreated", "The course"), "400": _error("Bad input"),
                                   "401": _error("Not signed in"), "429": _error("Too many courses created")}},
        },
        "/api/courses/join": {"post": {
            "summary": "Join a course with its code (again: no change; instructors stay instructors)",
            "operationId": "joinCourse",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
            "responses": {"200": _json("CourseSummary", "You are a member"), "401": _error("Not signed in"),
                          "403": _error("You were removed from this course"),
                          "404": _error("No course has this code"), "409": _error("The course is archived"),
                          "429": _error("Too many attempts")},
        }},
        "/api/courses/{course_id}": {"get": {
            "summary": "A course and its assignments; instructors also get its join code and members",
            "operationId": "getCourse", "parameters": [COURSE_ID],
            "responses": {"200": _json("Course", "The course"), "404": _error(NOT_FOUND)},
        }},
        "/api/courses/{course_id}/members": {"post": {
            "summary": "Invite a co-instructor (or a student) by username: a member once they accept; the answer "
                       "is the same whether or not anyone has the username. A member's role changes at once "
                       "(a member made an instructor is invited)",
            "operationId": "addCourseMember", "parameters": [COURSE_ID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["username"], "properties": {
                    "username": {"type": "string"},
                    "role": {"type": "string", "enum": ["instructor", "student"], "default": "instructor"}}}}}},
            "responses": {"202": _json("MemberAnswer", "Invited"), "200": _json("MemberAnswer", "The role changed"),
                          "400": _error("Bad username or role"), "403": _error("The creator cannot be stepped down"),
                          "404": _error(NOT_FOUND), "409": _error("Archived; or it would leave no instructor"),
                          "429": _error("Too many invitations")},
        }},
        "/api/courses/{course_id}/bans/{user_id}": {"delete": {
            "summary": "Let someone removed from the course join again (instructors)",
            "operationId": "liftCourseBan", "parameters": [COURSE_ID, _id_param("user_id", "removed person")],
            "responses": {"204": {"description": "They may join again"}, "404": _error("No such removed person")},
        }},
        "/api/me/invitations": {"get": {
            "summary": "The invitations to courses you may accept", "operationId": "listMyInvitations",
            "responses": {"200": _json("InvitationList", "Newest first"), "401": _error("Not signed in")},
        }},
        "/api/invitations/{invitation_id}/accept": {"post": {
            "summary": "Accept an invitation: you are a member with its role", "operationId": "acceptInvitation",
            "parameters": [_id_param("invitation_id", "invitation")],
            "responses": {"200": _json("CourseSummary", "You are a member"),
                          "404": _error("No such invitation of yours"), "409": _error("The course is archived")},
        }},
        "/api/invitations/{invitation_id}/decline": {"post": {
            "summary": "Decline an invitation", "operationId": "declineInvitation",
            "parameters": [_id_param("invitation_id", "invitation")],
            "responses": {"204": {"description": "Declined"}, "404": _error("No such invitation of yours")},
        }},
        "/api/courses/{course_id}/members/{user_id}": {"delete": {
            "summary": "Remove a member (instructors: a student or a co-instructor, never the creator, who then "
                       "cannot rejoin by the code until let back in; a student: themselves). Their submissions "
                       "are kept",
            "operationId": "removeCourseMember",
            "parameters": [COURSE_ID, _id_param("user_id", "member")],
            "responses": {"204": {"description": "Removed"}, "404": _error("No such member (or course)"),
                          "409": _error("Archived; or it would leave no instructor")},
        }},
        "/api/courses/{course_id}/archive": {"post": {
            "summary": "Archive the course (read-only: no joins, runs, submissions or edits); "
                       "{\"archived\": false} reopens it",
            "operationId": "archiveCourse", "parameters": [COURSE_ID],
            "requestBody": {"required": False, "content": {"application/json": {"schema": {
                "type": "object", "properties": {"archived": {"type": "boolean", "default": True}}}}}},
            "responses": {"200": _json("CourseSummary", "Done"), "404": _error(NOT_FOUND)},
        }},
        "/api/courses/{course_id}/assignments": {"post": {
            "summary": "Create an assignment (instructors)", "operationId": "createAssignment",
            "parameters": [COURSE_ID], "requestBody": _body("AssignmentRequest"),
            "responses": {"201": _json("Assignment", "The assignment (with its checks)"),
                          "400": _error("Bad input"), "404": _error(NOT_FOUND), "409": _error("Archived"),
                          "413": _error("Too long"), "422": _error("The checks are not valid Python (with the line)")},
        }},
        "/api/courses/{course_id}/dashboard": {"get": {
            "summary": "The dashboard's snapshot (instructors); the websocket /ws/courses/{course_id}/ sends it "
                       "first, then {type: update, item} as students run and submit",
            "operationId": "getCourseDashboard", "parameters": [COURSE_ID],
            "responses": {"200": _json("Dashboard", "The snapshot"), "404": _error(NOT_FOUND),
                          "429": _error("Too many snapshots from this client")},
        }},
        "/api/courses/{course_id}/grades.csv": {"get": {
            "summary": "Grades as CSV (instructors): a row per student, a column per assignment with the score "
                       "of the student's latest graded submission, and the total",
            "operationId": "getCourseGrades", "parameters": [COURSE_ID],
            "responses": {"200": {"description": "CSV", "content": {"text/csv": {"schema": {"type": "string"}}}},
                          "404": _error(NOT_FOUND)},
        }},
        "/api/assignments/{assignment_id}": {
            "parameters": [ASSIGNMENT_ID],
            "get": {"summary": "An assignment (a student's view has no checks; an instructor's has them and the "
                               "progress of the last regrade)",
                    "operationId": "getAssignment",
                    "responses": {"200": _json("Assignment", "The assignment"), "404": _error(NOT_FOUND)}},
            "patch": {"summary": "Change an assignment (instructors); changed checks get a new checks_version",
                      "operationId": "updateAssignment", "requestBody": _body("AssignmentRequest"),
                      "responses": {"200": _json("Assignment", "The assignment"), "400": _error("Bad input"),
                                    "404": _error(NOT_FOUND), "409": _error("Archived"),
                                    "422": _error("The checks are not valid Python")}},
        },
        "/api/assignments/{assignment_id}/runs": {"post": {
            "summary": "Run code on the assignment's device and limits, without its checks (any member)",
            "operationId": "startAssignmentRun", "parameters": [ASSIGNMENT_ID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
            "responses": {"201": _json("RunSummary", "The run was queued"), "400": _error("Bad input"),
                          "404": _error(NOT_FOUND), "409": _error("Archived"), "429": _error("Too many runs"),
                          "503": _error("No executor of the assignment's device kind is online")},
        }},
        "/api/assignments/{assignment_id}/submissions": {
            "parameters": [ASSIGNMENT_ID],
            "get": {"summary": "Submissions, newest first: a student's own; an instructor's, everyone's "
                               "(?student=<id> for one)",
                    "operationId": "listSubmissions",
                    "parameters": [{"name": "page", "in": "query", "required": False,
                                    "schema": {"type": "integer", "minimum": 1}},
                                   {"name": "student", "in": "query", "required": False,
                                    "schema": {"type": "integer", "minimum": 1}}],
                    "responses": {"200": _json("SubmissionList", "One page of 100"), "404": _error(NOT_FOUND)}},
            "post": {"summary": "Submit code: it is graded in the sandbox with the hidden checks",
                     "operationId": "submit",
                     "requestBody": {"required": True, "content": {"application/json": {"schema": {
                         "type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
                     "responses": {"201": _json("SubmissionCreated", "Queued for grading"),
                                   "400": _error("Bad input"), "404": _error(NOT_FOUND), "409": _error("Archived"),
                                   "429": _error("Too many runs"), "503": _error("No executor online")}},
        },
        "/api/assignments/{assignment_id}/regrade": {"post": {
            "summary": "Regrade the latest submission of each student with the current checks (instructors); "
                       "earlier grades stay until the new ones land",
            "operationId": "regradeAssignment", "parameters": [ASSIGNMENT_ID],
            "responses": {"202": {"description": "Queued", "content": {"application/json": {"schema": {
                "type": "object", "required": ["queued", "regrade"],
                "properties": {"queued": {"type": "integer"}, "regrade": {"type": "integer"}}}}}},
                "404": _error(NOT_FOUND), "409": _error("Archived"),
                "429": _error("Too many regrades, or your executor budget is used up"),
                "503": _error("No executor online; or the regrade would not fit in the queue")},
        }},
        "/api/submissions/{submission_id}": {"get": {
            "summary": "A submission and its grade (yours, or any of a course you teach)",
            "operationId": "getSubmission", "parameters": [SUBMISSION_ID],
            "responses": {"200": _json("Submission", "The submission"), "404": _error("No such submission")},
        }},
    }


def _course_schemas() -> dict:
    string, integer, boolean = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
    when = {"type": ["string", "null"], "format": "date-time"}
    number_or_null = {"type": ["number", "null"]}
    ref = lambda name: {"$ref": f"#/components/schemas/{name}"}
    role = {"type": "string", "enum": ["instructor", "student"]}
    grade_status = {"type": "string", "enum": ["queued", "grading", "graded"]}
    return {
        "CourseRequest": {"type": "object", "required": ["title"], "properties": {
            "title": {"type": "string", "maxLength": 200}}},
        "CourseSummary": {"type": "object", "required": ["id", "title", "role", "archived"], "properties": {
            "id": integer, "title": string, "role": role, "archived": boolean, "url": string}},
        "CourseCreated": {"allOf": [ref("CourseSummary"), {
            "type": "object", "required": ["join_code", "join_url"],
            "properties": {"join_code": string, "join_url": {"type": "string", "description": "A page path"}}}]},
        "CourseList": {"type": "object", "required": ["courses"], "properties": {
            "courses": {"type": "array", "items": ref("CourseSummary")}}},
        "Member": {"type": "object", "required": ["id", "username", "role"], "properties": {
            "id": integer, "username": string, "role": role}},
        "MemberAnswer": {"type": "object", "required": ["username", "role", "status"], "properties": {
            "username": string, "role": role, "status": {"type": "string", "enum": ["invited", "member"]},
            "expires_at": when, "id": integer}},
        "Invitation": {"type": "object", "required": ["id", "course", "role", "expires_at"], "properties": {
            "id": integer, "course": {"type": "object", "properties": {"id": integer, "title": string}},
            "role": role, "invited_by": {"type": ["string", "null"]}, "created_at": when, "expires_at": when,
            "accept": string, "decline": string}},
        "InvitationList": {"type": "object", "required": ["invitations"], "properties": {
            "invitations": {"type": "array", "items": ref("Invitation")}}},
        "Course": {"allOf": [ref("CourseSummary"), {
            "type": "object", "required": ["assignments"], "properties": {
                "assignments": {"type": "array", "items": ref("AssignmentSummary")},
                "created_at": when, "archived_at": when,
                "join_code": string, "join_url": string,
                "members": {"type": "array", "items": ref("Member"), "description": "Instructors only"},
                "invitations": {"type": "array", "description": "Instructors only: pending invitations"},
                "removed": {"type": "array", "description": "Instructors only: who may not rejoin by the code"}}}]},
        "AssignmentSummary": {"type": "object", "required": ["id", "title", "due", "device", "max_score"],
                              "properties": {
            "id": integer, "title": string, "url": string, "device": DEVICE,
            "due": when, "late": {"type": "boolean", "description": "Past its due date"},
            "results_before_due": boolean, "max_score": {"type": "number"},
            "mine": {"oneOf": [ref("SubmissionSummary"), {"type": "null"}],
                     "description": "Your latest submission"}}},
        "AssignmentRequest": {"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 200},
            "description": {"type": "string", "description": "Markdown (raw HTML is shown as text)"},
            "starter_code": string,
            "checks": {"type": "string", "description": "Hidden Python run after a submission's code in its sandbox: "
                       "check(name, passed, points=1, message=\"\") and the helpers of jaxplay.grading"},
            "device": DEVICE,
            "due": {"type": ["string", "null"], "format": "date-time", "description": "ISO 8601; UTC without offset"},
            "results_before_due": {"type": "boolean", "default": True},
            "limits": {"type": "object", "description": "Narrower run limits: any of "
                       + ", ".join(settings.RUN_LIMITS), "properties": {
                           k: {"type": "number", "exclusiveMinimum": 0, "maximum": v}
                           for k, v in settings.RUN_LIMITS.items()}},
        }, "description": "Creating: title is required"},
        "Assignment": {"type": "object", "required": [
            "id", "course", "title", "description", "description_html", "starter_code", "device", "due",
            "results_before_due", "late", "max_score"], "properties": {
            "id": integer, "course": integer, "course_title": string, "archived": boolean, "role": role,
            "title": string, "url": string, "description": string,
            "description_html": {"type": "string", "description": "The description rendered, without raw HTML"},
            "starter_code": string, "device": DEVICE, "limits": {"type": "object"},
            "due": when, "results_before_due": boolean, "late": {"type": "boolean", "description": "Past due"},
            "max_score": {"type": "number"}, "created_at": when, "updated_at": when,
            "checks": {"type": "string", "description": "Instructors only"},
            "checks_version": {"type": "integer", "description": "Instructors only"},
            "regrade": {"oneOf": [{"type": "object", "properties": {"regrade": integer, "queued": integer,
                                                                    "done": integer}}, {"type": "null"}],
                        "description": "Instructors only: the last regrade's progress"}}},
        "CheckResult": {"type": "object", "required": ["name", "passed", "points", "message"], "properties": {
            "name": string, "passed": boolean, "points": {"type": "number"}, "message": string}},
        "SubmissionCreated": {"type": "object", "required": ["id", "run", "ws"], "properties": {
            "id": integer, "run": {"type": "string", "format": "uuid", "description": "The grading run"},
            "ws": {"type": "string", "description": "Websocket path of the grading run's events"},
            "status": grade_status, "late": boolean}},
        "SubmissionSummary": {"type": "object", "required": [
            "id", "assignment", "student", "status", "score", "max_score", "late", "results"], "properties": {
            "id": integer, "assignment": integer,
            "student": {"type": "object", "properties": {"id": integer, "username": string}},
            "status": grade_status, "score": number_or_null, "max_score": number_or_null,
            "results": {"type": "string", "enum": ["shown", "after_due"],
                        "description": "after_due: a student's score and checks are withheld until the due date"},
            "late": boolean, "regrading": {"type": "boolean", "description": "A newer grading is on its way"},
            "run": {"type": ["string", "null"]}, "ws": {"type": ["string", "null"]},
            "created_at": when, "graded_at": when}},
        "Submission": {"allOf": [ref("SubmissionSummary"), {
            "type": "object", "required": ["code", "checks"], "properties": {
                "code": string,
                "checks": {"oneOf": [{"type": "array", "items": ref("CheckResult")}, {"type": "null"}]},
                "message": {"type": ["string", "null"], "description": "Why checks were not reached, if so"},
                "error": {"type": "string", "description": "Instructors only: a check's traceback, why grading failed"},
                "log": {"type": "string", "description": "Instructors only: what the checks printed"},
                "checks_version": {"type": ["integer", "null"]},
                "gradings": {"type": "array", "items": {"type": "object"}, "description": "Instructors only"}}}]},
        "SubmissionList": {"type": "object", "required": ["submissions", "next_page"], "properties": {
            "submissions": {"type": "array", "items": ref("SubmissionSummary")},
            "next_page": {"type": ["integer", "null"]}}},
        "Dashboard": {"type": "object", "required": [
            "students", "assignments", "cells", "feed", "errors", "histograms"], "properties": {
            "course": {"type": "object"},
            "students": {"type": "array", "items": {"type": "object", "properties": {"id": integer,
                                                                                      "username": string}}},
            "assignments": {"type": "array", "items": {"type": "object"}},
            "cells": {"type": "object", "description": "\"<student id>:<assignment id>\": {status, score, "
                      "max_score, late, submission, regrading, run, run_status, at}"},
            "feed": {"type": "array", "items": {"type": "object"}, "description": "The last 50 items, newest first"},
            "errors": {"type": "array", "items": {"type": "object", "properties": {
                "assignment": integer, "exc_type": string, "line": {"type": ["integer", "null"]},
                "count": integer, "students": integer, "message": string}}},
            "histograms": {"type": "object", "additionalProperties": {"type": "array", "items": integer},
                           "description": "Per assignment id: 10 counts of score/max_score (0-10 %, ..., 90-100 %)"},
        }},
    }
