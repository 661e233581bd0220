// What the names on a timeline mean, in a line each, in the page's language: a lane's
// ("TFRT_CPU_0", "/device:TPU:0", "Host"), a row's ("XLA Ops", "Python"), an op kind's
// ("fusion") and the common shapes of an op's own name ("ynn_fusion.2", "all-reduce.1"). The
// trace keeps the names as XLA and the profiler wrote them (they are what its docs and a search
// find); these lines say what each is. And whether a trace's devices are simulated: 8 CPU devices
// on a CPU executor are 8 threads of one processor, and a collective among them measures the
// threads waiting for one another, not a network. No DOM.
import { t } from "../i18n";
import type { Trace } from "./trace";

const CPU_DEVICE = /^(TFRT_)?CPU[_:]?\d|\/device:CPU:\d/i;
const GPU_DEVICE = /GPU[_:]?\d|\/device:GPU:\d/i;
const TPU_DEVICE = /TPU[_:]?\d|\/device:TPU:\d/i;

/** A lane's meaning by its name; null for a name it does not know. */
export function laneNote(name: string, simulated = false): string | null {
  if (name === "Host") return t("The host: the Python process that runs your code, traces and compiles it, and hands the compiled programs to the devices.");
  if (CPU_DEVICE.test(name)) {
    return simulated
      ? t("A simulated CPU device: one of the threads of this one processor that XLA treats as a device of its own.")
      : t("A CPU device: XLA's runtime for the processor (TFRT is the runtime's name).");
  }
  if (TPU_DEVICE.test(name)) return t("A TPU chip: the ops XLA ran on it.");
  if (GPU_DEVICE.test(name)) return t("A GPU: the kernels XLA ran on it.");
  if (/^XLA thread/i.test(name)) return t("A thread of XLA's on the host whose ops the profile could not tie to a device.");
  return null;
}

/** A row's (a thread's) meaning by its name ("XLA Ops 2": a second row of XLA Ops). */
export function rowNote(name: string): string | null {
  const base = name.replace(/\s+\d+$/, "");
  switch (base) {
    case "Python":
      return t("Your code's Python calls, nested as they called one another.");
    case "XLA dispatch":
      return t("The host handing a compiled program to the devices to run.");
    case "XLA compile":
      return t("XLA compiling a function for its shapes: done once, then taken from the cache.");
    case "XLA Modules":
      return t("Each run of a compiled program (an HLO module) on this device.");
    case "XLA Ops":
      return t("Each HLO instruction the device ran, inside its module's run.");
    default:
      return null;
  }
}

/** What an op kind stands for. */
export function kindNote(kind: string): string | null {
  switch (kind) {
    case "module":
      return t("A whole compiled program (an HLO module) run once.");
    case "fusion":
      return t("Several elementwise and reduce ops that XLA fused into one loop, so the data is read once.");
    case "matmul":
      return t("A matrix multiplication (dot).");
    case "convolution":
      return t("A convolution.");
    case "collective":
      return t("An op that moves data between devices: all-reduce, all-gather, psum, ...");
    case "copy":
      return t("Data copied or laid out anew in memory.");
    case "reduce":
      return t("A sum, maximum or other reduction over an axis.");
    case "elementwise":
      return t("Arithmetic on each element on its own: add, tanh, ...");
    case "custom-call":
      return t("A call into a library outside XLA's own code (a kernel of its CPU or GPU runtime).");
    case "control":
      return t("Control flow: a loop (while), a branch (conditional) or a call.");
    case "wait":
      return t("Time a collective spent waiting for its peers to arrive.");
    case "python":
      return t("A call of your Python code.");
    case "runtime":
      return t("The runtime's own work around the ops: launching, allocating, synchronising.");
    case "compile":
      return t("XLA compiling a function: done on the first call for each shape, then cached.");
    case "other":
      return t("An op of none of the kinds above.");
    default:
      return null;
  }
}

/** What an op's own name says, for the common patterns of XLA's names; null otherwise. */
export function opNote(name: string): string | null {
  const base = name.replace(/\.\d+$/, "");
  if (/^ynn_fusion/.test(base)) return t("A fusion that XLA's CPU backend hands to its YNNPACK kernels.");
  if (/fusion/.test(base)) return t("Ops XLA fused into one loop; the number tells fusions apart.");
  if (/^all-reduce|^psum/.test(base)) return t("all-reduce: every device ends with the sum (or mean) over all devices.");
  if (/^all-gather/.test(base)) return t("all-gather: every device ends with every device's shard.");
  if (/^reduce-scatter/.test(base)) return t("reduce-scatter: the sum over devices, each device keeping its own shard of it.");
  if (/^all-to-all/.test(base)) return t("all-to-all: each device sends a part of its data to every other.");
  if (/^collective-permute/.test(base)) return t("collective-permute: each device sends its data to one other device.");
  if (/^(dot|convolution)/.test(base)) return t("A matrix multiplication or convolution, usually the bulk of a model's arithmetic.");
  return null;
}

/** The devices' platform: the trace's own word, else what its lanes are named. */
export function platformOf(trace: Trace | null, devices: readonly string[]): string | null {
  const said = trace?.platform?.toLowerCase();
  if (said) return said;
  if (devices.length && devices.every((d) => CPU_DEVICE.test(d))) return "cpu";
  if (devices.some((d) => TPU_DEVICE.test(d))) return "tpu";
  if (devices.some((d) => GPU_DEVICE.test(d))) return "gpu";
  return null;
}

/** Whether the devices are simulated: more than one device, all of them a CPU's. */
export function simulatedDevices(trace: Trace | null, devices: readonly string[]): boolean {
  return devices.length > 1 && platformOf(trace, devices) === "cpu" && devices.every((d) => CPU_DEVICE.test(d));
}
