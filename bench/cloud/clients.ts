/**
 * The simulated AWS account of the capacity model: one DynamoDB, one SQS, one S3 (whose event
 * notifications reach the SQS) and a Secrets Manager, on a simulated clock; and the product's
 * `AwsClients` over them — the official SDK v3 clients with their request handler replaced, so
 * the product's real adapters run unchanged and every request is counted.
 *
 * ```ts
 * const world = new SimWorld();
 * const aws = new SimAws(world);
 * await world.run(async () => {
 *   const clients = aws.clients();                       // one Lambda container's clients
 *   const resources = await createCloudResources(clients, uniqueNames('bench'));
 *   // … run the product's handlers and use-cases with `clients` …
 * });
 * const accounting = aws.report();                        // capacity, requests, throttles, cost
 * ```
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { type AwsClients, createDocumentClient } from '../../shared/adapters/aws/clients.js';
import { type DynamoReport, SimDynamo, type SimDynamoOptions } from './dynamo.js';
import { type Clock, type PoolStats, SimHttpHandler } from './http.js';
import { type S3Report, SimS3, type SimS3Options } from './s3.js';
import { SimSecrets } from './secrets.js';
import { SimSqs, type SimSqsOptions, type SqsReport } from './sqs.js';

/** Credentials the SDK signs with (nothing checks them). */
export const SIMULATED_CREDENTIALS = { accessKeyId: 'SIMULATED', secretAccessKey: 'SIMULATED' };

export interface SimAwsOptions {
  region?: string;
  dynamo?: SimDynamoOptions;
  sqs?: SimSqsOptions;
  s3?: SimS3Options;
  /** Secrets by ARN (or name), e.g. the provider keys. */
  secrets?: Record<string, string>;
}

export interface SimClientOptions {
  /** Attempts per request, the first included (the SDK's standard retry mode). Default: the SDK's own per client. */
  maxAttempts?: number;
  /** Connections per client. Default 50 (the SDK's Node handler). */
  maxSockets?: number;
}

/** Everything the stand-ins counted; see each service's report. */
export interface CloudAccounting {
  dynamo: DynamoReport;
  sqs: SqsReport;
  s3: S3Report;
  secretsRequests: number;
  /** Requests that waited for a connection of their client's pool, over every client built. */
  pools: PoolStats;
  /** The requests' price, USD (DynamoDB request units, SQS requests, S3 requests; no storage or transfer). */
  usd: number;
}

export class SimAws {
  readonly region: string;
  readonly dynamo: SimDynamo;
  readonly sqs: SimSqs;
  readonly s3: SimS3;
  readonly secrets: SimSecrets;
  private readonly handlers: SimHttpHandler[] = [];

  constructor(
    private readonly clock: Clock,
    options: SimAwsOptions = {},
  ) {
    this.region = options.region ?? 'us-east-1';
    this.dynamo = new SimDynamo(clock, { region: this.region, ...options.dynamo });
    this.sqs = new SimSqs(clock, { region: this.region, ...options.sqs });
    this.s3 = new SimS3(clock, this.sqs, { region: this.region, ...options.s3 });
    this.secrets = new SimSecrets(clock);
    for (const [id, value] of Object.entries(options.secrets ?? {})) this.secrets.set(id, value);
  }

  /**
   * A fresh set of the product's SDK clients over the stand-ins: what `createAwsClients` builds
   * once per Lambda container, so build one set per simulated container.
   */
  clients({ maxAttempts, maxSockets }: SimClientOptions = {}): AwsClients {
    const handler = (service: SimDynamo | SimSqs | SimS3 | SimSecrets) => {
      const h = new SimHttpHandler(service, this.clock, maxSockets === undefined ? {} : { maxSockets });
      this.handlers.push(h);
      return h;
    };
    const common = {
      region: this.region,
      credentials: SIMULATED_CREDENTIALS,
      retryMode: 'standard',
      ...(maxAttempts === undefined ? {} : { maxAttempts }),
    };
    const dynamo = new DynamoDBClient({ ...common, requestHandler: handler(this.dynamo) });
    return {
      s3: new S3Client({ ...common, requestHandler: handler(this.s3) }),
      sqs: new SQSClient({ ...common, requestHandler: handler(this.sqs) }),
      dynamo,
      doc: createDocumentClient(dynamo),
      secrets: new SecretsManagerClient({ ...common, requestHandler: handler(this.secrets) }),
    };
  }

  report(topN = 5): CloudAccounting {
    const dynamo = this.dynamo.report(topN);
    const sqs = this.sqs.report();
    const s3 = this.s3.report();
    const pools: PoolStats = { requests: 0, queued: 0, queuedMs: 0, maxInFlight: 0 };
    for (const h of this.handlers) {
      pools.requests += h.stats.requests;
      pools.queued += h.stats.queued;
      pools.queuedMs += h.stats.queuedMs;
      pools.maxInFlight = Math.max(pools.maxInFlight, h.stats.maxInFlight);
    }
    return {
      dynamo,
      sqs,
      s3,
      secretsRequests: this.secrets.requests,
      pools,
      usd: dynamo.billed.usd + sqs.usd + s3.usd,
    };
  }
}
