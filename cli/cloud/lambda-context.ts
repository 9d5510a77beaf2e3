/**
 * The Lambda `Context` the local cloud hands a handler, in this thread (an in-process event
 * source) or in a container's (see containers.ts). It imports no SDK, so a container loads no
 * more than its function does.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

export interface LambdaContextOptions {
  functionName: string;
  region?: string;
  account?: string;
  /** When the invocation times out, epoch ms; `getRemainingTimeInMillis()` counts down to it. Default a minute from now. */
  deadline?: number;
  /** The function's memory, MB, as `memoryLimitInMB` says it. Default 512. */
  memoryMb?: number;
  /** Default a fresh one. */
  requestId?: string;
}

/** A Lambda `Context`: a request id, and a remaining time counted down to `deadline`. */
export function lambdaContext({
  functionName,
  region = 'us-east-1',
  account = '000000000000',
  deadline = Date.now() + 60_000,
  memoryMb = 512,
  requestId = randomUUID(),
}: LambdaContextOptions): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:${account}:function:${functionName}`,
    memoryLimitInMB: String(memoryMb),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/[$LATEST]${requestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
