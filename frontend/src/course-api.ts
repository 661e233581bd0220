// The courses API as the course pages use it (the contract: /api/openapi.json). Every answer is
// read defensively: a field the page needs and does not get is a missing value, never a crash.
import { request, type CreatedRun } from "./api";

export type Role = "instructor" | "student";

export interface CourseSummary {
  id: number;
  title: string;
  role: Role;
  archived: boolean;
}

export interface Member {
  id: number;
  username: string;
  role: Role;
}

export interface AssignmentDetail {
  id: number;
  course: number;
  title: string;
  description: string;
  /** The description as the server rendered and sanitised it. */
  description_html: string;
  starter_code: string;
  device: string;
  runtime?: string;
  due: string | null;
  results_before_due: boolean;
  /** Whether the due date has passed. */
  late: boolean;
  max_score: number | null;
  limits?: Record<string, number> | null;
  /** Instructors only. */
  checks?: string;
  /** Instructors only: hidden like the checks. */
  reference_solution?: string;
  /** Instructors only: the last regrade's progress. */
  regrade?: { regrade: number; queued: number; done: number } | null;
  /** Instructors only: the checks on the reference solution and the starter code (null: never). */
  validation?: Validation | null;
  /** Instructors only: the students' latest grades whose checks crashed (null: none). */
  check_errors?: CheckError | null;
  /** Instructors only: how many submissions there are (a regrade has something to do). */
  submissions?: number;
}

/** One graded run of a validation: the reference solution's or the starter code's. */
export interface ValidationRun {
  status: SubmissionStatus;
  score: number | null;
  max_score: number | null;
  full_marks?: boolean | null;
  /** As it should be (the reference with full marks, the starter code without); null until graded. */
  ok: boolean | null;
  needs_regrade?: boolean;
  checks: CheckResult[];
  message?: string;
  /** The checks' tracebacks. */
  error: string;
  log?: string;
}

export interface Validation {
  reference: ValidationRun | null;
  starter: ValidationRun | null;
  /** Why the last save queued no validation. */
  skipped: string | null;
}

/** Grades whose checks crashed: how many need a regrade, and the newest one's checks and traceback. */
export interface CheckError {
  assignment: number;
  submissions: number;
  checks: string[];
  error: string;
  submission?: number;
  student?: number;
  at?: string | null;
}

export interface CheckResult {
  name: string;
  passed: boolean;
  points: number | null;
  /** The check's points when passed (when the server says). */
  max_points?: number | null;
  message: string;
  /** The check's own code raised: it could not run (the instructor's to fix). */
  crashed?: boolean;
}

export type SubmissionStatus = "queued" | "grading" | "graded";

export interface Submission {
  id: number;
  assignment: number;
  /** An id, a name or {id, username}: whichever the server sends. */
  student: unknown;
  status: SubmissionStatus;
  score: number | null;
  max_score: number | null;
  late: boolean;
  created_at: string | null;
  graded_at: string | null;
  regrading: boolean;
  /** A check could not run (the checks' fault): the score is provisional until a regrade. */
  needs_regrade?: boolean | null;
  checks: CheckResult[] | null;
  /** "after_due": the score and checks are shown after the due date. */
  results?: string | null;
  run?: string | null;
  /** Why checks were not reached (for the student). */
  message?: string | null;
  /** The code submitted (the submission's detail). */
  code?: string;
  /** Instructors only. */
  error?: string | null;
  log?: string | null;
}

export interface NewSubmission {
  id: number;
  run: string;
  ws: string;
}

const enc = encodeURIComponent;

export function createCourse(title: string): Promise<{ id: number; title: string; join_code: string; join_url: string }> {
  return request("POST", "/api/courses", { title });
}

export function joinCourse(code: string): Promise<{ id: number; title: string; role: Role }> {
  return request("POST", "/api/courses/join", { code });
}

export function addInstructor(course: number, username: string): Promise<unknown> {
  return request("POST", `/api/courses/${course}/members`, { username, role: "instructor" });
}

export function removeMember(course: number, user: number): Promise<unknown> {
  return request("DELETE", `/api/courses/${course}/members/${user}`);
}

export function archiveCourse(course: number): Promise<unknown> {
  return request("POST", `/api/courses/${course}/archive`);
}

export interface AssignmentFields {
  title?: string;
  description?: string;
  starter_code?: string;
  checks?: string;
  reference_solution?: string;
  device?: string;
  /** The runtime its runs and gradings use (GET /api/runtimes). */
  runtime?: string;
  due?: string | null;
  results_before_due?: boolean;
  limits?: Record<string, number>;
}

export function createAssignment(course: number, fields: AssignmentFields): Promise<{ id: number }> {
  return request("POST", `/api/courses/${course}/assignments`, fields);
}

export function getAssignment(id: number): Promise<AssignmentDetail> {
  return request("GET", `/api/assignments/${id}`);
}

export function updateAssignment(id: number, fields: AssignmentFields): Promise<AssignmentDetail> {
  return request("PATCH", `/api/assignments/${id}`, fields);
}

export function startAssignmentRun(id: number, code: string): Promise<CreatedRun> {
  return request("POST", `/api/assignments/${id}/runs`, { code });
}

export function submit(id: number, code: string): Promise<NewSubmission> {
  return request("POST", `/api/assignments/${id}/submissions`, { code });
}

/** A student's own submissions; an instructor's: everyone's. Latest first. */
export async function listSubmissions(id: number): Promise<Submission[]> {
  const data = await request<{ submissions?: Submission[] } | Submission[]>("GET", `/api/assignments/${id}/submissions`);
  const list = Array.isArray(data) ? data : data?.submissions;
  return Array.isArray(list) ? list : [];
}

export function getSubmission(id: number | string): Promise<Submission> {
  return request("GET", `/api/submissions/${enc(String(id))}`);
}

export function regrade(id: number): Promise<{ queued: number }> {
  return request("POST", `/api/assignments/${id}/regrade`);
}

/** A student's name, whichever shape the server gave it in. */
export function studentName(student: unknown, fallback = ""): string {
  if (typeof student === "string") return student;
  if (student && typeof student === "object") {
    const s = student as { username?: unknown; name?: unknown };
    if (typeof s.username === "string") return s.username;
    if (typeof s.name === "string") return s.name;
  }
  return fallback;
}
