// The notebook's live session: one sandboxed runner that keeps the globals of the cells run in
// it (POST /api/sessions). Made on the first run, followed on its socket (its state: idle, live,
// stopped and why), asked to run one cell at a time (a 409 while another is still on its way is
// waited out here, so cells run in the order they were asked for), deleted on Restart. A cell is
// sent on that same socket when it is open ({"op": "cell"}: its events come back on it, wrapped
// as cell_event, playground/session_socket.py), else posted (POST .../cells) and followed on its
// run's own socket; a cell whose session socket drops mid-run is followed on its run's socket.
import { ApiError, OPEN_WAIT_MS, opened, request, type CreatedRun, type RunOptions } from "../api";
import type { EventFeed } from "../events";
import { t, tn } from "../i18n";
import { CLOSE_CODES } from "../protocol.gen";

export type SessionState = "idle" | "live" | "stopped";

export interface SessionInfo {
  id: string;
  url: string;
  ws: string;
  state: SessionState;
  started?: boolean;
  runtime?: string;
  device?: string;
  idle_timeout_s?: number;
  cells_run?: number;
  /** What it holds: name → a short type or shape. */
  names?: Record<string, string>;
  memory_bytes?: number | null;
  stopped_reason?: string | null;
  /** On an exclusive chip (a TPU's): the chips it holds, until when if it stays idle, how many wait. */
  lease?: { chips: string; until: string | null; waiting: number } | null;
}

/** "you hold TPU chip 0 until 14:32 · 3 waiting": a session's lease of its chip, or null. */
export function leaseText(info: SessionInfo): string | null {
  const lease = info.lease;
  if (!lease) return null;
  const chip = (info.device || "").split(":")[0] === "tpu"
    ? t("TPU chip {chips}", { chips: lease.chips }) : t("chip {chips}", { chips: lease.chips });
  const until = lease.until ? new Date(lease.until) : null;
  const time = until && !Number.isNaN(until.getTime())
    ? until.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : null;
  const held = time ? t("you hold {chip} until {time}", { chip, time }) : t("you hold {chip}", { chip });
  return lease.waiting > 0 ? `${held} · ${tn("{n} waiting", "{n} waiting", lease.waiting, { n: lease.waiting })}` : held;
}

/** What the page shows of the session: none yet, being made, or as the server says. */
export type SessionView =
  | { phase: "none" }
  | { phase: "starting" }
  | { phase: "failed"; message: string }
  | { phase: "state"; info: SessionInfo };

/** How long a cell waits for the one before it to be let go by the session (409s). */
const BUSY_PATIENCE_MS = 120_000;
const BUSY_RETRY_MS = 250;

function sessionPath(id: string): string {
  return `/api/sessions/${encodeURIComponent(id)}`;
}

function readInfo(data: unknown): SessionInfo | null {
  if (!data || typeof data !== "object") return null;
  const d = data as Partial<SessionInfo>;
  if (typeof d.id !== "string") return null;
  const state: SessionState = d.state === "live" || d.state === "stopped" ? d.state : "idle";
  return {
    ...d,
    id: d.id,
    url: typeof d.url === "string" ? d.url : sessionPath(d.id),
    ws: typeof d.ws === "string" ? d.ws : `/ws/sessions/${encodeURIComponent(d.id)}/`,
    state,
  };
}

/** A cell's events as its session's socket carries them, for the cell's RunStream. */
class CellFeed implements EventFeed {
  private early: unknown[] = [];
  private onMessage: ((data: unknown) => void) | null = null;
  private onClose: (() => void) | null = null;
  closed = false;

  constructor(
    readonly runId: string,
    private readonly onRelease: (feed: CellFeed) => void,
  ) {}

  push(data: unknown): void {
    if (this.closed) return;
    if (this.onMessage) this.onMessage(data);
    else this.early.push(data);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose?.();
  }

  listen(onMessage: (data: unknown) => void, onClose: () => void): void {
    this.onMessage = onMessage;
    this.onClose = onClose;
    for (const data of this.early.splice(0)) onMessage(data);
    if (this.closed) onClose();
  }

  release(): void {
    this.onMessage = this.onClose = null;
    this.closed = true;
    this.onRelease(this);
  }
}

/** What a cell sent on the session's socket is answered: started (its run), or refused. */
type CellAnswer = { type: "cell_started"; run: CreatedRun } | { type: "refused"; status?: number; error?: string };

export class LiveSession {
  private info: SessionInfo | null = null;
  private making: Promise<SessionInfo> | null = null;
  private socket: WebSocket | null = null;
  private retryTimer: number | undefined;
  private retryMs = 500;
  private view: SessionView = { phase: "none" };
  /** Waits for the answer to a cell sent on the socket (null: the socket closed first). */
  private answer: ((answer: CellAnswer | null) => void) | null = null;
  /** The cell whose events the socket carries. */
  private feed: CellFeed | null = null;
  /** Cells started on the session's socket, and posted: how this page's cells went. */
  readonly sent = { socket: 0, post: 0 };

  constructor(
    /** The runtime and device a new session asks for. */
    private readonly where: () => { runtime: string | null; device: string | null },
    private readonly onView: (view: SessionView) => void,
  ) {}

  /** The live session's id (null: none, or it has stopped). */
  get id(): string | null {
    return this.info && this.info.state !== "stopped" ? this.info.id : null;
  }

  /** The last session's id, stopped or not. */
  get lastId(): string | null {
    return this.info?.id ?? null;
  }

  get current(): SessionView {
    return this.view;
  }

  /** After a reload: the session the cells ran in, when it still lives. Whether it does. */
  async pickUp(id: string): Promise<boolean> {
    try {
      const info = readInfo(await request("GET", sessionPath(id)));
      if (!info) return false;
      this.adopt(info);
      return info.state !== "stopped";
    } catch {
      return false;
    }
  }

  /** The live session, made when there is none (or the last has stopped). */
  async ensure(): Promise<SessionInfo> {
    if (this.info && this.info.state !== "stopped") return this.info;
    if (!this.making) {
      this.making = this.create().finally(() => (this.making = null));
    }
    return this.making;
  }

  private async create(): Promise<SessionInfo> {
    this.show({ phase: "starting" });
    const { runtime, device } = this.where();
    try {
      const info = readInfo(await request("POST", "/api/sessions", {
        ...(runtime ? { runtime } : {}),
        ...(device ? { device } : {}),
      }));
      if (!info) throw new ApiError(500, t("The server answered without a session."));
      this.adopt(info);
      return info;
    } catch (error) {
      this.show({ phase: "failed", message: sessionError(error) });
      throw error;
    }
  }

  /** Runs one cell's code in the session: its run, whose events stream as any run's. */
  async run(code: string, onWait: () => void, options?: RunOptions): Promise<CreatedRun> {
    const info = await this.ensure();
    const giveUpAt = Date.now() + BUSY_PATIENCE_MS;
    let waited = false;
    for (;;) {
      try {
        const body = options && Object.keys(options).length ? { code, options } : { code };
        const started = await this.sendCell(body);
        if (started) return started;
        const run = await request<CreatedRun>("POST", `${sessionPath(info.id)}/cells`, body);
        this.sent.post += 1;
        return run;
      } catch (error) {
        if (error instanceof ApiError && error.status === 409 && Date.now() < giveUpAt) {
          // The cell before it is still being let go: wait for the session, then ask again.
          if (!waited) onWait();
          waited = true;
          await new Promise((resolve) => window.setTimeout(resolve, BUSY_RETRY_MS));
          continue;
        }
        if (error instanceof ApiError && error.status === 410) void this.refresh(info.id);
        throw error;
      }
    }
  }

  /** Starts a cell on the session's socket: its run (whose events the socket carries), or null
   *  when the socket is not open (the cell is then posted). A refusal throws ApiError as the
   *  POST's would. */
  private async sendCell(body: { code: string; options?: RunOptions }): Promise<CreatedRun | null> {
    const socket = this.socket;
    // A socket still opening (a new session's first cell) is waited for a moment.
    if (!socket || !(await opened(socket, OPEN_WAIT_MS)) || socket !== this.socket || this.answer || this.feed) {
      return null;
    }
    const answered = new Promise<CellAnswer | null>((resolve) => (this.answer = resolve));
    socket.send(JSON.stringify({ op: "cell", ...body }));
    const answer = await answered;
    if (answer === null) throw new ApiError(0, t("the connection closed before the cell started; try again"));
    if (answer.type === "refused") throw new ApiError(answer.status ?? 400, answer.error ?? t("the cell was refused"));
    const feed = new CellFeed(answer.run.id, (done) => {
      if (this.feed === done) this.feed = null;
    });
    this.feed = feed;
    this.sent.socket += 1;
    return { ...answer.run, feed };
  }

  /** A cell's message on the session's socket: the answer to the cell sent, or one of its events. */
  private onCellMessage(data: { type?: unknown; run?: unknown; event?: unknown }): void {
    if (data.type === "cell_event") {
      if (this.feed && data.run === this.feed.runId) this.feed.push(data.event);
      return;
    }
    const answer = this.answer;
    this.answer = null;
    answer?.(data as CellAnswer);
  }

  /** The socket closed: a cell waiting for its answer is told so, and one running goes on on its
   *  run's own socket. */
  private dropCell(): void {
    const answer = this.answer;
    this.answer = null;
    answer?.(null);
    const feed = this.feed;
    this.feed = null;
    feed?.close();
  }

  /** Ends the session (Restart, or the page's own stop). */
  async stop(): Promise<void> {
    const info = this.info;
    this.closeSocket();
    this.info = null;
    this.show({ phase: "none" });
    if (info && info.state !== "stopped") {
      try {
        await request("DELETE", sessionPath(info.id));
      } catch {
        // Gone already: nothing to stop.
      }
    }
  }

  /** Asks the server how the session is (after a 410, or when its socket will not open). */
  async refresh(id: string): Promise<void> {
    try {
      const info = readInfo(await request("GET", sessionPath(id)));
      if (info && this.info?.id === id) this.adopt(info);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404 && this.info?.id === id) {
        this.adopt({ ...this.info, state: "stopped", stopped_reason: this.info.stopped_reason ?? t("The session is gone.") });
      }
    }
  }

  private adopt(info: SessionInfo): void {
    const changed = this.info?.id !== info.id;
    this.info = info;
    this.show({ phase: "state", info });
    if (info.state === "stopped") this.closeSocket();
    else if (changed || !this.socket) this.follow(info);
  }

  private show(view: SessionView): void {
    this.view = view;
    this.onView(view);
  }

  /** Its state on its socket: once on connect and at every change. */
  private follow(info: SessionInfo): void {
    this.closeSocket();
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(new URL(info.ws, `${scheme}//${location.host}`));
    this.socket = socket;
    socket.onopen = () => {
      this.retryMs = 500;
    };
    socket.onmessage = (message) => {
      if (socket !== this.socket) return;
      let data: unknown;
      try {
        data = JSON.parse(String(message.data));
      } catch {
        return;
      }
      const type = (data as { type?: unknown })?.type;
      if (type === "cell_started" || type === "cell_event" || type === "refused") {
        this.onCellMessage(data as { type?: unknown });
        return;
      }
      if (type !== "state") return;
      const next = readInfo({ ...(this.info ?? {}), ...(data as object), id: info.id });
      if (next) this.adopt(next);
    };
    socket.onclose = (close) => {
      if (socket !== this.socket) return;
      this.socket = null;
      this.dropCell();
      if (!this.info || this.info.id !== info.id || this.info.state === "stopped") return;
      if (close.code === CLOSE_CODES.not_found) {
        void this.refresh(info.id);
        return;
      }
      // Dropped: ask how it is, and listen again.
      window.clearTimeout(this.retryTimer);
      this.retryTimer = window.setTimeout(() => {
        void this.refresh(info.id).then(() => {
          if (this.info?.id === info.id && this.info.state !== "stopped" && !this.socket) this.follow(this.info);
        });
      }, this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, 8000);
    };
  }

  private closeSocket(): void {
    window.clearTimeout(this.retryTimer);
    const socket = this.socket;
    this.socket = null;
    this.dropCell();
    if (socket && socket.readyState <= WebSocket.OPEN) socket.close(1000);
  }
}

/** Why no session could be made, in plain words. */
export function sessionError(error: unknown): string {
  if (!(error instanceof ApiError)) return t("Could not start a session: {error}", { error: String(error) });
  if (error.status === 429) return t("You have as many live sessions as one person may: {error}", { error: error.message });
  if (error.status === 503) return t("No executor has room for a session right now. Try again in a minute.");
  if (error.status === 0) return error.message;
  return t("Could not start a session: {error}", { error: error.message });
}

/** Why a session stops, as the executor and the server store it (in English), and in the page's
 *  language. */
const STOP_REASONS: Record<string, string> = {
  "it was ended": t("it was ended"),
  "it was ended by its owner": t("it was ended by its owner"),
  "its runner ended": t("its runner ended"),
  "its runner ended while no cell ran": t("its runner ended while no cell ran"),
  "its cell did not stop when interrupted": t("its cell did not stop when interrupted"),
  "the executor failed while it ran a cell": t("the executor failed while it ran a cell"),
  "the session is not known here": t("the session is not known here"),
  "its node restarted": t("its node restarted"),
  "the session's runner lives on another node, which no longer answers for it":
    t("the session's runner lives on another node, which no longer answers for it"),
  "the session's runner was started on another node": t("the session's runner was started on another node"),
  "the playground restarted and forgot it (its state is lost; restore the notebook to run its cells again)":
    t("the playground restarted and forgot it (its state is lost; restore the notebook to run its cells again)"),
  "its node stopped answering (its state is lost; restore the notebook to run its cells again)":
    t("its node stopped answering (its state is lost; restore the notebook to run its cells again)"),
};

/** Why a session stopped, in the page's language; a reason not known here is shown as it came. */
export function stopReason(reason: string): string {
  const known = STOP_REASONS[reason];
  if (known) return known;
  const minutes = /^it was idle for (\d+(?:\.\d+)?) minutes?$/.exec(reason);
  if (minutes) return tn("it was idle for {n} minute", "it was idle for {n} minutes", Number(minutes[1]), { n: minutes[1] });
  const seconds = /^it was idle for (\d+(?:\.\d+)?) s$/.exec(reason);
  if (seconds) return t("it was idle for {n} s", { n: seconds[1] });
  const full = /^this node holds the most sessions it may \((\d+)\); stop one of yours or try again later$/.exec(reason);
  if (full) return t("this node holds the most sessions it may ({n}); stop one of yours or try again later", { n: full[1] });
  const cpu = /^it used over (\d+(?:\.\d+)?) s of CPU while no cell ran \(a thread left running\)$/.exec(reason);
  if (cpu) return t("it used over {n} s of CPU while no cell ran (a thread left running)", { n: cpu[1] });
  // A cell's end that ended its session too: why, then what its run said.
  const colon = reason.indexOf(": ");
  const head = colon > 0 ? STOP_REASONS[reason.slice(0, colon)] : undefined;
  return head ? t("{reason}: {detail}", { reason: head, detail: reason.slice(colon + 2) }) : reason;
}
