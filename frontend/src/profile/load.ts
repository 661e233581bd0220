// A profile's trace fetched from its URL (same origin: GET /api/runs/<id>/profile, gzipped on
// the wire, which fetch() undoes), read as it streams so that its progress can be shown, then
// parsed. No DOM.
import { t } from "../i18n";
import { parseTrace, type Trace } from "./trace";

export interface FetchOptions {
  signal: AbortSignal;
  /** Bytes of JSON received so far (after decompression), as they come. */
  onProgress?(received: number): void;
  /** All of it is here: it is parsed next. */
  onReceived?(): void;
  /** The server is still building it (202, after the run's end): asked again shortly. */
  onBuilding?(): void;
}

/** How often, and how many times, a trace being built is asked for again. */
const BUILDING_RETRY_MS = 500;
const BUILDING_TRIES = 240;

export async function fetchTrace(url: string, { signal, onProgress, onReceived, onBuilding }: FetchOptions): Promise<Trace> {
  let response = await fetch(url, { credentials: "same-origin", signal, headers: { Accept: "application/json" } });
  for (let tries = 0; response.status === 202; tries++) {
    if (tries >= BUILDING_TRIES) throw new Error(t("the timeline was not built in time"));
    onBuilding?.();
    await new Promise((resolve) => setTimeout(resolve, BUILDING_RETRY_MS));
    if (signal.aborted) throw new DOMException("aborted", "AbortError");
    response = await fetch(url, { credentials: "same-origin", signal, headers: { Accept: "application/json" } });
  }
  if (!response.ok) throw new Error(await failure(response));
  const chunks: Uint8Array[] = [];
  let received = 0;
  const reader = response.body?.getReader();
  if (reader) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      received += value.length;
      onProgress?.(received);
    }
  } else {
    const whole = new Uint8Array(await response.arrayBuffer());
    chunks.push(whole);
    onProgress?.(whole.length);
  }
  onReceived?.();
  const text = await new Blob(chunks as BlobPart[]).text();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(t("the trace is not JSON"));
  }
  return parseTrace(data);
}

/** The server's words for a failed fetch ({"error": ...}), else its status. */
async function failure(response: Response): Promise<string> {
  try {
    const data = await response.json();
    if (data && typeof data.error === "string") return data.error;
  } catch {
    // Not JSON: its status says enough.
  }
  return t("the server answered {status}", { status: `${response.status} ${response.statusText}`.trim() });
}
