// The JSON HTTP API the page uses (see docs: the public contract in ARCHITECTURE.md).
// Errors come back as {"error": "human message"} (in the page's language: the server follows the
// same choice); ApiError carries that message and the status.
import type { EventFeed } from "./events";
import { t } from "./i18n";

export interface Device {
  kind: string;
  online: boolean;
  workers?: number;
  slots?: number;
  device_count?: number;
  device_kind?: string;
  platform?: string;
  jax_version?: string;
  queue_depth?: number;
  /** Slots not running a run now, over all the kind's workers. */
  free_runners?: number;
  /** Memory of one device: a GPU's or TPU's, on CPU the host's. */
  memory_bytes?: number | null;
  jaxlib_version?: string | null;
  /** The pinned libraries a run on this kind can import, name to version. */
  libraries?: Record<string, string> | null;
  /** The specific device kinds online under this kind ("gpu:h200"), each with its own queue. */
  specific?: SpecificDevice[];
}

export interface SpecificDevice {
  /** The device string a run asks for: "gpu:h200". */
  device: string;
  workers: number;
  slots?: number;
  free_runners?: number;
  queue_depth: number;
  /** Exclusive chips (a TPU's): how many, how many have a runner ready, how many runs wait. */
  chips?: number;
  chips_ready?: number;
  chip_waiting?: number;
  device_kind?: string | null;
  device_count?: number | null;
  memory_bytes?: number | null;
  jax_version?: string | null;
}

export interface CreatedRun {
  id: string;
  status: string;
  device: string;
  /** Websocket path of the run's events. */
  ws: string;
  /** Started on the page's run socket (RunLauncher): that socket now carries the run's events,
   *  and what it sent before anyone listened. Not part of the JSON. */
  launched?: { socket: WebSocket; early: string[] };
  /** A notebook cell started on its session's socket: that socket carries its events. Not part
   *  of the JSON. */
  feed?: EventFeed;
}

export interface RunRecord {
  id: string;
  status: string;
  device: string;
  /** The code that ran. */
  code?: string;
  created_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  wall_ms: number | null;
  /** One page of the run's events, in seq order: those after the page's `after`. */
  events: unknown[];
  /** The `after` of the next page, or null on the last page. */
  events_next: number | null;
}

/** Which page of a run's events GET /api/runs/<id> returns: those after seq `after` (0: from
 *  the first), at most `limit` of them (the server's own page size when not given, and at most
 *  that). */
export interface EventsPage {
  after?: number;
  limit?: number;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** Django's CSRF token, from its cookie (set on every page with the editor); null when absent. */
export function csrfToken(): string | null {
  for (const part of document.cookie.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === "csrftoken") {
      try {
        return decodeURIComponent(value.join("="));
      } catch {
        return value.join("=");
      }
    }
  }
  return null;
}

/** One JSON request to the API: the parsed answer, or an ApiError with the server's message. */
export async function request<T>(method: Method, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  // A signed-in session is CSRF-checked: every request that changes something carries the token.
  if (method !== "GET") {
    const token = csrfToken();
    if (token) headers["X-CSRFToken"] = token;
  }
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, t("Cannot reach the server. Check your connection and try again."));
  }
  let data: unknown = null;
  try {
    data = await response.json();
  } catch {
    // A proxy's HTML error page, an empty 502...: fall through to a generic message.
  }
  if (!response.ok) {
    const message =
      data && typeof data === "object" && typeof (data as { error?: unknown }).error === "string"
        ? (data as { error: string }).error
        : t("The server answered {status} {statusText}", { status: response.status, statusText: response.statusText }).trim();
    throw new ApiError(response.status, message);
  }
  return data as T;
}

export interface Runtime {
  id: string;
  title: string;
  jax: string | null;
  default: boolean;
  /** The kinds with a worker of this runtime online now. */
  kinds: string[];
}

export async function listRuntimes(): Promise<Runtime[]> {
  const data = await request<{ runtimes?: Runtime[] }>("GET", "/api/runtimes");
  return Array.isArray(data?.runtimes) ? data.runtimes : [];
}

export async function listDevices(): Promise<Device[]> {
  const sent = Date.now();
  const data = await request<{ devices?: Device[]; server_time?: number }>("GET", "/api/devices");
  if (typeof data?.server_time === "number") setServerClock(data.server_time, sent, Date.now());
  return Array.isArray(data?.devices) ? data.devices : [];
}

// How far the server's clock (events' `ts`) is ahead of this browser's, in seconds; null until
// the server has said its time.
let serverAhead: number | null = null;

function setServerClock(serverTime: number, sentMs: number, receivedMs: number): void {
  // The server read its clock about halfway through the request.
  serverAhead = serverTime - (sentMs + receivedMs) / 2000;
}

/** The server's time now (Unix seconds), or null when it is not known yet. */
export function serverNow(): number | null {
  return serverAhead === null ? null : Date.now() / 1000 + serverAhead;
}

/** How a run runs, beyond its code and device. */
export interface RunOptions {
  /** Under jax.profiler: its log gets a `profile` event with the trace's link. */
  profile?: boolean;
}

/** Starts a run. `snippet`: the slug of the snippet whose code this is, unchanged (a snippet
 *  without a saved run keeps its first run as its output). `runtime`: the runtime to run on
 *  (a pinned snippet's), else the site's default. On the run socket the page keeps open when it
 *  has one (no request and no opening handshake before the run starts), else POST /api/runs. */
export async function startRun(
  code: string,
  device: string,
  snippet?: string | null,
  runtime?: string | null,
  options?: RunOptions | null,
): Promise<CreatedRun> {
  const body = {
    code,
    device,
    ...(snippet ? { snippet } : {}),
    ...(runtime ? { runtime } : {}),
    ...(options && Object.keys(options).length ? { options } : {}),
  };
  return (await launcher.start(body)) ?? request<CreatedRun>("POST", "/api/runs", body);
}

/**
 * A websocket to /ws/runs/new/ opened ahead of the next run (`prepare`): Run sends the code on
 * it, and the same socket then carries the run's events (playground/consumers.py). One run per
 * socket; the next is opened once the page is idle again. Without one open, `start` answers
 * null and the run is started with a POST.
 */
export class RunLauncher {
  private socket: WebSocket | null = null;

  /** Opens the socket for the next run, unless one is open or opening. */
  prepare(): void {
    if (this.socket && this.socket.readyState <= WebSocket.OPEN) return;
    if (typeof WebSocket === "undefined") return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}/ws/runs/new/`);
    this.socket = socket;
    socket.onclose = () => {
      if (this.socket === socket) this.socket = null;
    };
  }

  /** Starts a run on the open socket: the run, or null when there is no open socket. A refusal
   *  throws ApiError as the POST's would (and the socket stays for the next try). */
  async start(body: object): Promise<CreatedRun | null> {
    const socket = this.socket;
    if (!socket || !(await opened(socket, OPEN_WAIT_MS))) return null;
    return new Promise((resolve, reject) => {
      const early: string[] = [];
      let run: CreatedRun | null = null;
      socket.onmessage = (message) => {
        const text = String(message.data);
        if (run !== null) {
          early.push(text); // the run's first events, until its stream takes the socket
          return;
        }
        let data: { type?: string; run?: CreatedRun; status?: number; error?: string } | null = null;
        try {
          data = JSON.parse(text);
        } catch {
          return;
        }
        if (data?.type === "refused") {
          reject(new ApiError(data.status ?? 400, data.error ?? t("the run was refused")));
        } else if (data?.type === "started_run" && data.run) {
          run = { ...data.run, launched: { socket, early } };
          if (this.socket === socket) this.socket = null; // the run's now
          resolve(run);
        }
      };
      socket.onclose = () => {
        if (this.socket === socket) this.socket = null;
        if (run === null) reject(new ApiError(0, t("the connection closed before the run started; try again")));
      };
      socket.send(JSON.stringify({ op: "start", ...body }));
    });
  }
}

// How long Run waits for a run socket still opening before it posts instead.
export const OPEN_WAIT_MS = 2000;

/** Whether `socket` is open, waiting up to `ms` for one still connecting. */
export function opened(socket: WebSocket, ms: number): Promise<boolean> {
  if (socket.readyState !== WebSocket.CONNECTING) return Promise.resolve(socket.readyState === WebSocket.OPEN);
  return new Promise((resolve) => {
    const done = () => {
      window.clearTimeout(timer);
      socket.removeEventListener("open", done);
      socket.removeEventListener("close", done);
      resolve(socket.readyState === WebSocket.OPEN);
    };
    const timer = window.setTimeout(done, ms);
    socket.addEventListener("open", done);
    socket.addEventListener("close", done);
  });
}

/** The page's run socket. */
export const launcher = new RunLauncher();

export interface NewSnippet {
  code: string;
  title?: string;
  description?: string;
  device?: string;
  /** The runtime it is pinned to; null: the run's, else the default. */
  runtime?: string | null;
  /** A finished run of exactly this code, kept as the snippet's output. */
  run?: string | null;
  /** The snippet this one was forked from. */
  parent?: string | null;
}

export interface SavedSnippet {
  slug: string;
  /** The absolute URL of its page. */
  url: string;
  /** False when the same content had been shared before: the same link. */
  created: boolean;
  run: string | null;
}

/** Saves a snippet: 201 for a new one, 200 (the same slug) for content shared before. */
export function createSnippet(snippet: NewSnippet): Promise<SavedSnippet> {
  return request<SavedSnippet>("POST", "/api/snippets", snippet);
}

/** The run and one page of its events (the first, unless `page` says otherwise). */
export function getRun(id: string, page: EventsPage = {}): Promise<RunRecord> {
  const query = new URLSearchParams();
  if (page.after !== undefined) query.set("after", String(page.after));
  if (page.limit !== undefined) query.set("limit", String(page.limit));
  const search = query.toString();
  return request<RunRecord>("GET", `/api/runs/${encodeURIComponent(id)}${search ? `?${search}` : ""}`);
}

export function cancelRun(id: string): Promise<{ id: string; status: string }> {
  return request("POST", `/api/runs/${encodeURIComponent(id)}/cancel`);
}

export interface ServerDraft {
  key: string;
  title: string;
  code: string;
  updated_at: string;
}

/** A signed-in person's drafts, newest first. */
export async function listDrafts(): Promise<ServerDraft[]> {
  const data = await request<{ drafts?: ServerDraft[] }>("GET", "/api/me/drafts");
  return Array.isArray(data?.drafts) ? data.drafts : [];
}

export function saveDraft(key: string, code: string, title: string): Promise<ServerDraft> {
  return request<ServerDraft>("PUT", `/api/me/drafts/${encodeURIComponent(key)}`, { code, title });
}

export function deleteDraft(key: string): Promise<void> {
  return request<void>("DELETE", `/api/me/drafts/${encodeURIComponent(key)}`);
}

/** The code formatted by ruff on the server (422: not valid Python, the message says where). */
export async function formatCode(code: string): Promise<string> {
  const data = await request<{ code?: string }>("POST", "/api/format", { code });
  if (typeof data?.code !== "string") throw new ApiError(500, t("The formatter answered without code."));
  return data.code;
}

/** One side of a comparison as the server tells it (GET /api/comparisons/<slug>). */
export interface ComparisonSide {
  /** "A" or "B". */
  name: string;
  /** "JAX 0.4.38 · CPU". */
  label: string;
  device: string;
  runtime: string;
  jax: string;
  run: CreatedRun & { runtime: string; wall_ms: number | null; finished_at: string | null };
}

export interface Comparison {
  slug: string;
  /** The absolute URL of its page. */
  url: string;
  title: string;
  code: string;
  created_at: string;
  /** The snippet whose page asked for it. */
  snippet: { slug: string; title: string; url: string } | null;
  sides: ComparisonSide[];
}

/** Where one side runs: a new run there, or a run of the same code that exists. */
export type SideRequest = { runtime?: string | null; device: string } | { run: string };

/** Runs `code` on two runtimes (or devices) at once and keeps both runs under one link. */
export function createComparison(body: {
  code: string;
  sides: [SideRequest, SideRequest];
  title?: string;
  snippet?: string | null;
  /** Both sides' (a side's own `options` would win). */
  options?: RunOptions;
  /** Both sides' standard input. */
  stdin?: string;
}): Promise<Comparison> {
  return request<Comparison>("POST", "/api/comparisons", body);
}
