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
const { module, tmpDir } = workerData as ContainerData;

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

async function invoke({ id, event, context }: ToContainer): Promise<void> {
  let reply: FromContainer;
  try {
    reply = { type: 'response', id, response: await handler(event, lambdaContext(context)) };
  } catch (error) {
    reply = { type: 'error', id, error: described(error) };
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
