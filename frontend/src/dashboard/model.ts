// What the course's websocket tells the dashboard: the class (students, assignments), a cell per
// student and assignment, the feed's items, the common errors; and what a cell shows.
import type { CheckError } from "../course-api";
import { clauses, points, scoreTone } from "../course-page";
import { t } from "../i18n";
import { statusWord } from "../status";

export interface Student {
  id: number;
  username: string;
}

export interface AssignmentInfo {
  id: number;
  title: string;
  max_score: number | null;
  due?: string | null;
}

export interface Cell {
  status: string | null;
  score: number | null;
  max_score: number | null;
  late: boolean;
  submission: number | null;
  regrading?: boolean;
  /** A check of its grade crashed: the score is provisional until a regrade. */
  needs_regrade?: boolean;
  run: string | null;
  run_status: string | null;
  at: string | null;
}

export interface Item {
  kind: "run" | "submission" | "regrade" | "check_error" | "member_removed" | string;
  run?: string | null;
  student?: number;
  assignment?: number;
  submission?: number | null;
  status?: string;
  exc_type?: string;
  line?: number;
  score?: number | null;
  max_score?: number | null;
  late?: boolean;
  regrading?: boolean;
  needs_regrade?: boolean;
  /** check_error: the checks that could not run, and the traceback. */
  checks?: string[];
  error?: string;
  regrade?: number;
  queued?: number;
  done?: number;
  user?: number;
  username?: string;
  role?: string | null;
  at?: string | null;
}

export interface CommonError {
  exc_type: string;
  line: number | null;
  assignment: number;
  count: number;
  students: number | number[];
  message?: string;
}

/** An assignment whose checks crashed on students' latest grades (the instructor's to fix): the
 * API's shape, one definition for the assignment page and the dashboard. */
export type CheckErrors = CheckError;

export interface Snapshot {
  students: Student[];
  assignments: AssignmentInfo[];
  cells: Record<string, Cell>;
  feed: Item[];
  errors: CommonError[];
  check_errors?: CheckErrors[];
  histograms: Record<string, number[]>;
}

/** A run or a submission still on its way. */
export const BUSY = new Set(["queued", "running", "grading"]);

export function emptyCell(): Cell {
  return { status: null, score: null, max_score: null, late: false, submission: null, regrading: false,
           needs_regrade: false, run: null, run_status: null, at: null };
}

/** What a cell shows: the latest submission's score or state, and the latest run's. */
export function describeCell(cell: Cell | undefined): { main: string; sub: string; label: string; tone: string } {
  if (!cell || (cell.submission === null && cell.run === null)) return { main: "–", sub: "", label: t("nothing yet"), tone: "none" };
  const parts: string[] = [];
  let main = "";
  let tone = "none";
  const scored = { score: points(cell.score), max: points(cell.max_score) };
  if (cell.status === "graded" && typeof cell.score === "number" && cell.needs_regrade) {
    main = `${points(cell.score)}/${points(cell.max_score)}`;
    tone = "crashed";
    parts.push(t("provisionally {score} of {max}: the checks crashed, needs a regrade", scored));
  } else if (cell.status === "graded" && typeof cell.score === "number") {
    main = `${points(cell.score)}/${points(cell.max_score)}`;
    tone = scoreTone(cell.score, cell.max_score);
    parts.push(t("scored {score} of {max}", scored));
  } else if (cell.status === "queued" || cell.status === "grading") {
    main = t("grading");
    tone = "busy";
    parts.push(t("submission being graded"));
  } else if (cell.status === "graded") {
    main = t("graded");
    parts.push(t("graded"));
  }
  if (cell.regrading) parts.push(t("regrading"));
  if (cell.late) parts.push(t("late"));
  let sub = "";
  const run = cell.run_status;
  if (run) {
    if (BUSY.has(run)) {
      sub = run === "queued" ? t("queued") : t("running");
      if (!main) {
        main = sub;
        sub = "";
      }
      if (tone === "none") tone = "busy";
      parts.push(t("latest run {status}", { status: statusWord(run) }));
    } else if (run === "succeeded") {
      if (!main) main = t("ran");
      else sub = t("ran ✓");
      parts.push(t("latest run succeeded"));
    } else {
      // A failed run reads "error" in the grid; the other endings by their status word.
      const word = run === "failed" ? t("error") : statusWord(run);
      if (!main) {
        main = word;
        tone = "error";
      } else {
        sub = word;
      }
      parts.push(t("latest run {status}", { status: statusWord(run) }));
    }
  }
  if (cell.needs_regrade && !sub) sub = t("regrade");
  if (cell.late && !sub) sub = t("late");
  if (cell.submission === null) parts.unshift(t("not submitted"));
  return { main: main || "–", sub, label: clauses(parts), tone };
}
