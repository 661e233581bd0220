"""The courses' part of the OpenAPI document (web/openapi.py): courses, members and invitations,
assignments, submissions, the dashboard."""

from __future__ import annotations

from django.conf import settings

from web.openapi import DEVICE, RUNTIME, body, error, reply


def _id_param(name: str, what: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1},
            "description": f"The {what}'s id (a non-member gets 404, as for one that does not exist)"}


COURSE_ID = _id_param("course_id", "course")
ASSIGNMENT_ID = _id_param("assignment_id", "assignment")
SUBMISSION_ID = _id_param("submission_id", "submission")
NOT_FOUND = "No such course, or you are not a member (or not its instructor, for what only instructors use)"


def paths() -> dict:
    return {
        "/api/courses": {
            "get": {"summary": "Your courses (taught and taken)", "operationId": "listCourses",
                    "responses": {"200": reply("CourseList", "Newest first"), "401": error("Not signed in")}},
            "post": {"summary": "Create a course: you are its instructor; it gets a join code and link",
                     "operationId": "createCourse", "requestBody": body("CourseRequest"),
                     "responses": {"201": reply("CourseCreated", "The course"), "400": error("Bad input"),
                                   "401": error("Not signed in"), "429": error("Too many courses created")}},
        },
        "/api/courses/join": {"post": {
            "summary": "Join a course with its code (again: no change; instructors stay instructors)",
            "operationId": "joinCourse",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
            "responses": {"200": reply("CourseSummary", "You are a member"), "401": error("Not signed in"),
                          "403": error("You were removed from this course"),
                          "404": error("No course has this code"), "409": error("The course is archived"),
                          "429": error("Too many attempts")},
        }},
        "/api/courses/{course_id}": {"get": {
            "summary": "A course and its assignments; instructors also get its join code and members",
            "operationId": "getCourse", "parameters": [COURSE_ID],
            "responses": {"200": reply("Course", "The course"), "404": error(NOT_FOUND)},
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
            "responses": {"202": reply("MemberAnswer", "Invited"), "200": reply("MemberAnswer", "The role changed"),
                          "400": error("Bad username or role"), "403": error("The creator cannot be stepped down"),
                          "404": error(NOT_FOUND), "409": error("Archived; or it would leave no instructor"),
                          "429": error("Too many invitations")},
        }},
        "/api/courses/{course_id}/bans/{user_id}": {"delete": {
            "summary": "Let someone removed from the course join again (instructors)",
            "operationId": "liftCourseBan", "parameters": [COURSE_ID, _id_param("user_id", "removed person")],
            "responses": {"204": {"description": "They may join again"}, "404": error("No such removed person")},
        }},
        "/api/me/invitations": {"get": {
            "summary": "The invitations to courses you may accept", "operationId": "listMyInvitations",
            "responses": {"200": reply("InvitationList", "Newest first"), "401": error("Not signed in")},
        }},
        "/api/invitations/{invitation_id}/accept": {"post": {
            "summary": "Accept an invitation: you are a member with its role", "operationId": "acceptInvitation",
            "parameters": [_id_param("invitation_id", "invitation")],
            "responses": {"200": reply("CourseSummary", "You are a member"),
                          "404": error("No such invitation of yours"), "409": error("The course is archived")},
        }},
        "/api/invitations/{invitation_id}/decline": {"post": {
            "summary": "Decline an invitation", "operationId": "declineInvitation",
            "parameters": [_id_param("invitation_id", "invitation")],
            "responses": {"204": {"description": "Declined"}, "404": error("No such invitation of yours")},
        }},
        "/api/courses/{course_id}/members/{user_id}": {"delete": {
            "summary": "Remove a member (instructors: a student or a co-instructor, never the creator, who then "
                       "cannot rejoin by the code until let back in; a student: themselves). Their submissions "
                       "are kept",
            "operationId": "removeCourseMember",
            "parameters": [COURSE_ID, _id_param("user_id", "member")],
            "responses": {"204": {"description": "Removed"}, "404": error("No such member (or course)"),
                          "409": error("Archived; or it would leave no instructor")},
        }},
        "/api/courses/{course_id}/archive": {"post": {
            "summary": "Archive the course (read-only: no joins, runs, submissions or edits); "
                       "{\"archived\": false} reopens it",
            "operationId": "archiveCourse", "parameters": [COURSE_ID],
            "requestBody": {"required": False, "content": {"application/json": {"schema": {
                "type": "object", "properties": {"archived": {"type": "boolean", "default": True}}}}}},
            "responses": {"200": reply("CourseSummary", "Done"), "404": error(NOT_FOUND)},
        }},
        "/api/courses/{course_id}/assignments": {"post": {
            "summary": "Create an assignment (instructors)", "operationId": "createAssignment",
            "parameters": [COURSE_ID], "requestBody": body("AssignmentRequest"),
            "responses": {"201": reply("Assignment", "The assignment (with its checks)"),
                          "400": error("Bad input"), "404": error(NOT_FOUND), "409": error("Archived"),
                          "413": error("Too long"), "422": error("The checks are not valid Python (with the line)")},
        }},
        "/api/courses/{course_id}/dashboard": {"get": {
            "summary": "The dashboard's snapshot (instructors); the websocket /ws/courses/{course_id}/ sends it "
                       "first, then {type: update, item} as students run and submit",
            "operationId": "getCourseDashboard", "parameters": [COURSE_ID],
            "responses": {"200": reply("Dashboard", "The snapshot"), "404": error(NOT_FOUND),
                          "429": error("Too many snapshots from this client")},
        }},
        "/api/courses/{course_id}/grades.csv": {"get": {
            "summary": "Grades as CSV (instructors): a row per student, a column per assignment with the score "
                       "of the student's latest graded submission (\"needs regrade\" while a check of it could "
                       "not run), and the total",
            "operationId": "getCourseGrades", "parameters": [COURSE_ID],
            "responses": {"200": {"description": "CSV", "content": {"text/csv": {"schema": {"type": "string"}}}},
                          "404": error(NOT_FOUND)},
        }},
        "/api/assignments/{assignment_id}": {
            "parameters": [ASSIGNMENT_ID],
            "get": {"summary": "An assignment (a student's view has no checks; an instructor's has them, the "
                               "reference solution, its validation, the checks that crashed and the progress "
                               "of the last regrade)",
                    "operationId": "getAssignment",
                    "responses": {"200": reply("Assignment", "The assignment"), "404": error(NOT_FOUND)}},
            "patch": {"summary": "Change an assignment (instructors); changed checks get a new checks_version, "
                                 "and a change to what is graded (checks, reference solution, starter code, "
                                 "device, runtime, limits) validates it again",
                      "operationId": "updateAssignment", "requestBody": body("AssignmentRequest"),
                      "responses": {"200": reply("Assignment", "The assignment"), "400": error("Bad input"),
                                    "404": error(NOT_FOUND), "409": error("Archived"),
                                    "422": error("The checks are not valid Python")}},
        },
        "/api/assignments/{assignment_id}/runs": {"post": {
            "summary": "Run code on the assignment's device and limits, without its checks (any member)",
            "operationId": "startAssignmentRun", "parameters": [ASSIGNMENT_ID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
            "responses": {"201": reply("RunSummary", "The run was queued"), "400": error("Bad input"),
                          "404": error(NOT_FOUND), "409": error("Archived"), "429": error("Too many runs"),
                          "503": error("No executor of the assignment's device kind is online")},
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
                    "responses": {"200": reply("SubmissionList", "One page of 100"), "404": error(NOT_FOUND)}},
            "post": {"summary": "Submit code: it runs, then the hidden checks run in the checker",
                     "description": "The code runs in a sandboxed runner as any run does; then the checks run "
                                    "after it, in a process of their own: the checker, a sandboxed runner that no "
                                    "student code ever runs in.",
                     "operationId": "submit",
                     "requestBody": {"required": True, "content": {"application/json": {"schema": {
                         "type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
                     "responses": {"201": reply("SubmissionCreated", "Queued for grading"),
                                   "400": error("Bad input"), "404": error(NOT_FOUND), "409": error("Archived"),
                                   "429": error("Too many runs"), "503": error("No executor online")}},
        },
        "/api/assignments/{assignment_id}/regrade": {"post": {
            "summary": "Regrade the latest submission of each student with the current checks (instructors); "
                       "earlier grades stay until the new ones land",
            "operationId": "regradeAssignment", "parameters": [ASSIGNMENT_ID],
            "responses": {"202": {"description": "Queued", "content": {"application/json": {"schema": {
                "type": "object", "required": ["queued", "regrade"],
                "properties": {"queued": {"type": "integer"}, "regrade": {"type": "integer"}}}}}},
                "404": error(NOT_FOUND), "409": error("Archived"),
                "429": error("Too many regrades, or your executor budget is used up"),
                "503": error("No executor online; or the regrade would not fit in the queue")},
        }},
        "/api/submissions/{submission_id}": {"get": {
            "summary": "A submission and its grade (yours, or any of a course you teach)",
            "operationId": "getSubmission", "parameters": [SUBMISSION_ID],
            "responses": {"200": reply("Submission", "The submission"), "404": error("No such submission")},
        }},
    }


def schemas() -> dict:
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
            "id": integer, "title": string, "url": string, "device": DEVICE, "runtime": RUNTIME,
            "due": when, "late": {"type": "boolean", "description": "Past its due date"},
            "results_before_due": boolean, "max_score": {"type": "number"},
            "mine": {"oneOf": [ref("SubmissionSummary"), {"type": "null"}],
                     "description": "Your latest submission"}}},
        "AssignmentRequest": {"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 200},
            "description": {"type": "string", "description": "Markdown (raw HTML is shown as text)"},
            "starter_code": string,
            "reference_solution": {"type": "string", "description": "Hidden like the checks: a solution that should "
                                   "get full marks. Saving grades it and the starter code with the checks "
                                   "(the assignment's validation)"},
            "checks": {"type": "string", "description": "Hidden Python run after a submission's code, in a process of "
                       "its own (the checker, a sandboxed runner that no student code ever runs in): "
                       "check(name, passed, points=1, message=\"\") and the helpers of jaxplay.grading"},
            "device": DEVICE,
            "runtime": {**RUNTIME, "description": "The runtime its runs and gradings use, pinned when it is "
                        "made (default: the default runtime then), so that grades do not move when the site's "
                        "default does"},
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
            "starter_code": string, "device": DEVICE, "runtime": RUNTIME, "limits": {"type": "object"},
            "due": when, "results_before_due": boolean, "late": {"type": "boolean", "description": "Past due"},
            "max_score": {"type": "number"}, "created_at": when, "updated_at": when,
            "checks": {"type": "string", "description": "Instructors only"},
            "reference_solution": {"type": "string", "description": "Instructors only"},
            "checks_version": {"type": "integer", "description": "Instructors only"},
            "regrade": {"oneOf": [{"type": "object", "properties": {"regrade": integer, "queued": integer,
                                                                    "done": integer}}, {"type": "null"}],
                        "description": "Instructors only: the last regrade's progress"},
            "validation": {"oneOf": [ref("Validation"), {"type": "null"}],
                           "description": "Instructors only: the checks on the reference solution and the starter "
                                          "code, as last saved (null: never validated)"},
            "check_errors": {"oneOf": [ref("CheckError"), {"type": "null"}],
                             "description": "Instructors only: students' latest grades whose checks crashed"},
            "submissions": {"type": "integer",
                            "description": "Instructors only: how many submissions there are (a regrade's work)"}}},
        "Validation": {"type": "object", "required": ["reference", "starter", "skipped"], "properties": {
            "reference": {"oneOf": [ref("ValidationRun"), {"type": "null"}],
                          "description": "null: no reference solution"},
            "starter": {"oneOf": [ref("ValidationRun"), {"type": "null"}], "description": "null: no starter code"},
            "skipped": {"type": ["string", "null"],
                        "description": "Why the last save queued no validation (the budget, the queue, no executor)"}}},
        "ValidationRun": {"type": "object", "required": ["status", "score", "max_score", "ok", "checks", "error"],
                          "properties": {
            "status": grade_status, "score": number_or_null, "max_score": number_or_null,
            "full_marks": {"type": ["boolean", "null"]},
            "ok": {"type": ["boolean", "null"], "description": "As it should be: the reference with full marks, the "
                   "starter code without (null until graded)"},
            "needs_regrade": boolean, "checks": {"type": "array", "items": ref("CheckResult")},
            "message": string, "error": {"type": "string", "description": "The checks' tracebacks"}, "log": string,
            "checks_version": integer, "run": string, "created_at": when, "finished_at": when}},
        "CheckError": {"type": "object", "required": ["assignment", "submissions", "checks", "error"], "properties": {
            "assignment": integer, "submissions": {"type": "integer", "description": "Grades that need a regrade"},
            "checks": {"type": "array", "items": string, "description": "The checks that could not run (the newest)"},
            "error": {"type": "string", "description": "The newest one's traceback"},
            "submission": integer, "student": integer, "at": when}},
        "CheckResult": {"type": "object", "required": ["name", "passed", "points", "message"], "properties": {
            "name": string, "passed": boolean, "points": {"type": "number"}, "message": string,
            "crashed": {"type": "boolean", "description": "The check's own code raised: it could not run (the "
                        "instructor's to fix, then regrade)"}}},
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
            "needs_regrade": {"type": ["boolean", "null"], "description": "A check could not run (the checks' "
                              "fault): the score is provisional until a regrade"},
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
                      "max_score, late, submission, regrading, needs_regrade, run, run_status, at}"},
            "feed": {"type": "array", "items": {"type": "object"}, "description": "The last 50 items, newest first"},
            "errors": {"type": "array", "items": {"type": "object", "properties": {
                "assignment": integer, "exc_type": string, "line": {"type": ["integer", "null"]},
                "count": integer, "students": integer, "message": string}}},
            "check_errors": {"type": "array", "items": ref("CheckError"),
                             "description": "Per assignment whose checks crashed on students' latest grades"},
            "histograms": {"type": "object", "additionalProperties": {"type": "array", "items": integer},
                           "description": "Per assignment id: 10 counts of score/max_score (0-10 %, ..., 90-100 %)"},
        }},
    }
