// What an assignment's page knows of it (#assignment-data), and how it follows a grading.

/** The page's data, kept up to date by a save (settings.ts). */
export interface AssignmentData {
  id: number;
  title: string;
  course: { id: number; title: string; archived: boolean };
  role: "instructor" | "student";
  starter_code: string;
  device: string;
  /** The runtime its runs and gradings use: the editor's analysis answers for it too. */
  runtime: string;
  devices: string[];
  due: string | null;
  past_due: boolean;
  results_before_due: boolean;
  max_score: number | null;
  wall_s: number | null;
  username: string;
}

/** How often a submission being graded is asked about, and for how long at most. */
export const POLL_MS = 1000;
export const POLL_FOR_MS = 15 * 60 * 1000;
