/**
 * The entry of a local cloud container, a worker thread started by containers.ts. Like a
 * Lambda container, it loads its function's module once (the init phase: the composition
 * root, SDK clients and caches of this thread alone), then runs the module's `handler` for each
 * invocation the pool posts, with a Lambda `Context` counted down to the invocation's deadline,
 * and posts back the response or the error.
 *
 * The stack's functions are imported from here by name, so that the build bundles them with
 * this entry (dist/container.js) and a packed CLI starts containers without the sources; a
 * test's handler comes as the URL of its module.
 */
import { parentPort, threadId, workerData } from 'node:worker_threads';
import type { FunctionName } from '../../shared/lib/layout/queues.js';
import type { ContainerData, FromContainer, ToContainer } from './containers.js';
import { lambdaContext } from './lambda-context.js';

type Handler = (event: unknown, context: unknown) => unknown;

const STACK_FUNCTIONS: Record<FunctionName, () => Promise<{ handler: unknown }>> = {
  ingest: () => import('../../functions/ingest.js'),
  worker: () => import('../../functions/worker.js'),
  deadLetter: () => import('../../functions/dead-letter.js'),
  aggregate: () => import('../../functions/aggregate.js'),
  batchPoller: () => import('../../functions/batch-poller.js'),
  watchdog: () => import('../../functions/watchdog.js'),
};

const port = parentPort;
if (!port) throw new Error('cli/cloud/container.ts runs as a worker thread (see containers.ts)');
const { module, tmpDir, memoryMb, memoryCheckMs } = workerData as ContainerData;

// The function's /tmp. Set here rather than in the thread's starting environment: in a
// development clone, tsx is loaded before this module and keeps its compiled-module cache in
// the temporary folder it finds then, the machine's, shared by every container (in the
// container's /tmp it would be compiled again in each one, and count against its storage).
process.env.TMPDIR = tmpDir;

const loaded = Object.hasOwn(STACK_FUNCTIONS, module)
  ? await STACK_FUNCTIONS[module as FunctionName]()
  : ((await import(module)) as { handler?: unknown });
if (typeof loaded.handler !== 'function') throw new TypeError(`${module} exports no handler function`);
const handler = loaded.handler as Handler;

port.on('message', (message: ToContainer) => {
  void invoke(message);
});
post({ type: 'ready', threadId });

const MIB = 1024 * 1024;
/**
 * What this container holds, MB: its JS heap, and the memory outside it this thread made
 * (buffers, WebAssembly memory), which Lambda counts against the function as well. The
 * process's RSS would count the other containers' too: these figures are this thread's.
 */
function memoryUsed(): { usedMb: number; outsideHeapMb: number } {
  const { heapTotal, external } = process.memoryUsage();
  return { usedMb: Math.round((heapTotal + external) / MIB), outsideHeapMb: Math.round(external / MIB) };
}
/** The most memory held since the invocation began, MB. */
let peakMb = 0;
let overSaid = false;
const sample = () => {
  const used = memoryUsed();
  peakMb = Math.max(peakMb, used.usedMb);
  if (used.usedMb > memoryMb && !overSaid) {
    overSaid = true;
    post({ type: 'memory', ...used });
  }
};
setInterval(sample, memoryCheckMs).unref();

async function invoke({ id, event, context }: ToContainer): Promise<void> {
  peakMb = 0;
  sample();
  let reply: FromContainer;
  try {
    const response = await handler(event, lambdaContext(context));
    sample();
    reply = { type: 'response', id, response, maxMemoryMb: peakMb };
  } catch (error) {
    sample();
    reply = { type: 'error', id, error: described(error), maxMemoryMb: peakMb };
  }
  try {
    post(reply);
  } catch (error) {
    // A response that cannot be copied to the parent (a function in it, say) fails the invocation.
    post({ type: 'error', id, error: described(error) });
  }
}

function post(message: FromContainer): void {
  port!.postMessage(message);
}

function described(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) {
    return { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack } : {}) };
  }
  return { name: 'Error', message: String(error) };
}
