// The JSON HTTP API the page uses (see docs: the public contract in ARCHITECTURE.md).
// Errors come back as {"error": "human message"}; ApiError carries that message and the status.

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
  /** The pinned libraries a run on this kind can import, name to version. */
  libraries?: Record<string, string> | null;
}

export interface CreatedRun {
  id: string;
  status: string;
  device: string;
  /** Websocket path of the run's events. */
  ws: string;
}

export interface RunRecord {
  id: string;
  status: string;
  device: string;
  created_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  wall_ms: number | null;
  events: unknown[];
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

async function request<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: body === undefined ? { Accept: "application/json" } : {
        Accept: "application/json",
        "Content-Type": "application/json",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, "Cannot reach the server. Check your connection and try again.");
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
        : `The server answered ${response.status} ${response.statusText}`.trim();
    throw new ApiError(response.status, message);
  }
  return data as T;
}

export async function listDevices(): Promise<Device[]> {
  const data = await request<{ devices?: Device[] }>("GET", "/api/devices");
  return Array.isArray(data?.devices) ? data.devices : [];
}

export function startRun(code: string, device: string): Promise<CreatedRun> {
  return request<CreatedRun>("POST", "/api/runs", { code, device });
}

export function getRun(id: string): Promise<RunRecord> {
  return request<RunRecord>("GET", `/api/runs/${encodeURIComponent(id)}`);
}

export function cancelRun(id: string): Promise<{ id: string; status: string }> {
  return request("POST", `/api/runs/${encodeURIComponent(id)}/cancel`);
}
