import { describe, expect, it } from 'vitest';
import { ConfigError, parseFunctionEnv } from '../../../shared/adapters/aws/env.js';

describe('parseFunctionEnv', () => {
  const base = { BUCKET_NAME: 'b', TABLE_NAME: 't' };
  const queue = 'https://sqs.us-east-1.amazonaws.com/123456789012/assay-aggregate';

  it('asks a function only for the queue URLs its stack wiring sets', () => {
    expect(parseFunctionEnv(['AGGREGATE_QUEUE_URL'], { ...base, AGGREGATE_QUEUE_URL: queue })).toEqual({
      ...base,
      AGGREGATE_QUEUE_URL: queue,
      ASSAY_CACHE_TTL_DAYS: 30,
      ASSAY_INGEST_CHUNK_BYTES: 8 * 1024 * 1024,
      ASSAY_INGEST_CLAIMS_PER_SECOND: 0,
      ASSAY_RESULT_READ_UNITS_PER_SECOND: 0,
      ASSAY_AGGREGATION_LEASE_MS: 960_000,
      ASSAY_AGGREGATE_IN_PARTS_FROM: 50_000,
      ASSAY_STUCK_AFTER_MS: 3_600_000,
      ASSAY_RESULT_TTL_DAYS: 0,
    });
    expect(parseFunctionEnv([], base)).not.toHaveProperty('ITEMS_QUEUE_URL');
  });

  it('names every missing or invalid variable at once', () => {
    const error = (() => {
      try {
        parseFunctionEnv(['ITEMS_QUEUE_URL', 'AGGREGATE_QUEUE_URL'], {
          TABLE_NAME: 't',
          ITEMS_QUEUE_URL: 'nope',
          BUCKET_NAME: '',
        });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/BUCKET_NAME is not set/);
    expect((error as Error).message).toMatch(/ITEMS_QUEUE_URL is invalid/);
    expect((error as Error).message).toMatch(/AGGREGATE_QUEUE_URL is not set/);
  });
});
