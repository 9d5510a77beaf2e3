/**
 * The local moto (scripts/moto_serial.py) sends a message without counting its queue: moto
 * itself computes every attribute of the queue for each message sent, counting all its messages
 * through their visibility, so sending a run's items took time in proportion to the square of
 * their number (5,000 items outlasted the ingest function's 300 s timeout under `assay cloud`).
 * Counted here in visibility checks, not time: the same on any machine.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers.js';

const run = promisify(execFile);

/**
 * Fills a queue with `queued` messages through moto's backend (as moto_serial.py sets it up
 * when `patched`), then counts the visibility checks one SendMessageBatch of ten makes, and reads
 * the queue's counts afterwards.
 */
async function sendOnto(queued: number, patched: boolean) {
  const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(join(REPO, 'scripts'))})
import moto_serial
from moto.sqs.models import Message, sqs_backends
if ${patched ? 'True' : 'False'}:
    moto_serial.constant_time_lookups()
backend = sqs_backends["123456789012"]["us-east-1"]
dlq = backend.create_queue("items-dlq")
backend.create_queue("items", RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq.queue_arn, "maxReceiveCount": 3}))
def batch(start):
    return {str(i): {"Id": str(i), "MessageBody": f"item {start + i}", "MessageAttributes": {}, "DelaySeconds": None} for i in range(10)}
for start in range(0, ${queued}, 10):
    backend.send_message_batch("items", batch(start))
checks = 0
visible = Message.visible
def counted(self):
    global checks
    checks += 1
    return visible.fget(self)
Message.visible = property(counted)
backend.send_message_batch("items", batch(${queued}))
during = checks
attributes = backend.get_queue_attributes("items", ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
print(json.dumps({"checks": during, "visible": int(attributes["ApproximateNumberOfMessages"]), "notVisible": int(attributes["ApproximateNumberOfMessagesNotVisible"])}))
`;
  const { stdout } = await run('python3', ['-c', script], { cwd: REPO });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    checks: number;
    visible: number;
    notVisible: number;
  };
}

describe('the local moto sends messages without counting the queue', { timeout: 600_000 }, () => {
  it('makes no visibility check for a send onto a queue of 200 (moto alone makes thousands), and counts the queue right after', async () => {
    const [patched, moto] = await Promise.all([sendOnto(200, true), sendOnto(200, false)]);

    expect(patched).toEqual({ checks: 0, visible: 210, notVisible: 0 });
    // Three counts of the 200 messages and more for each of the ten sent.
    expect(moto.checks).toBeGreaterThanOrEqual(10 * 200);
    expect(moto.visible).toBe(210);
  });
});
