/** The capacity model's report as a person reads it: a few lines and tables of plain text. */
import { type Check, renderTable } from '../../parts/table.js';
import { FUNCTIONS } from './figures.js';
import type { CloudModelReport } from './model.js';

export function summary(report: CloudModelReport): string {
  const n = (x: number | null | undefined, digits = 0) =>
    x === null || x === undefined
      ? '—'
      : x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const usd = (x: number) => `$${x < 1 ? x.toFixed(4) : x.toFixed(2)}`;
  const s = report.settings;
  const cost = report.awsCostPer1MUsd;
  const lines = [
    `Capacity model — ${n(report.items)} items, worker concurrency ${n(s.workerConcurrency)} (${s.esm} mode), simulated LLM ${n(s.llmMs)} ms median, seed ${s.seed}${s.answerBytes ? `, answers of ${n(s.answerBytes / 1024)} KB` : ''}`,
    `  throughput     ${n(report.sustainedItemsPerSecond)} items/s sustained (upload → report.json); ${n(report.itemsPerSecond)} between 5 % and 95 % of results; wall ${n(report.wallSeconds, 1)} s`,
    `  set by         ${report.stages.limitingStage}; ingest's steady rate ${n(report.stages.ingestSteadyItemsPerSecond)} items/s`,
    `  fleet          peak ${n(report.fleet.peakConcurrency)} invocations at once (worker ${n(report.fleet.peakWorkerConcurrency)}; the items mapping starts ${n(report.fleet.scaling.initial)}, adds ${n(report.fleet.scaling.perMinute)}/min up to ${n(report.fleet.scaling.concurrency)}); account ${n(report.fleet.accountConcurrency)}, reserved ${
      Object.entries(report.fleet.reserved)
        .map(([fn, r]) => `${fn} ${r}`)
        .join(', ') || 'none'
    }; waited for an execution: ${
      Object.entries(report.fleet.throttled)
        .map(([fn, k]) => `${fn} ${k}`)
        .join(', ') || 'none'
    }`,
    `  LLM            ${n(report.llm.calls)} calls, p50 ${n(report.llm.p50Ms)} ms, p99 ${n(report.llm.p99Ms)} ms; ${n(report.llm.refused429)} answered 429`,
    `  hottest key    ${report.hottestKey ? `${report.hottestKey.key}: ${n(report.hottestKey.peakWruPerSecond)} WRU/s, ${n(report.hottestKey.peakRruPerSecond)} RRU/s offered` : '—'}; throttled ${n(report.throttled)}`,
    `  table peak     ${n(report.tablePeak.wru)} WRU/s, ${n(report.tablePeak.rru)} RRU/s offered (quota ${n(report.tablePeak.quota.wru)}/${n(report.tablePeak.quota.rru)}, warm ${n(report.tablePeak.warm.wru)}/${n(report.tablePeak.warm.rru)}${report.tablePeak.warm.declared ? '' : ', a new table’s'}); refused ${n(report.tablePeak.refused)}`,
    `  AWS per 1M     ${usd(cost.total)} (DynamoDB ${usd(cost.dynamodb)} + storage ${usd(cost.dynamodbStorage)}, Lambda ${usd(cost.lambda)}, SQS ${usd(cost.sqs)}, S3 ${usd(cost.s3)}, logs ${usd(cost.logs)}, Secrets ${usd(cost.secretsManager)})`,
    `  LLM per 1M     ${report.llmCostPer1MUsd === null ? '—' : usd(report.llmCostPer1MUsd)} (simulated calls priced as gpt-4o-mini)${report.llmCostPer1MUsd ? `; AWS is ${n((100 * cost.total) / report.llmCostPer1MUsd, 1)} % of it` : ''}`,
    `  per item       ${n(report.perItem.dynamoWriteUnits, 2)} WRU, ${n(report.perItem.dynamoReadUnits, 2)} RRU (${n(report.perItem.dynamoWriteRequests, 2)} write and ${n(report.perItem.dynamoReadRequests, 2)} read requests: the figures \`assay cloud\` on moto counts too), ${n(report.perItem.sqsBilledRequests, 2)} SQS requests, ${n(report.perItem.logBytes)} log bytes; ${n(report.stages.meanRecordsPerWorkerInvocation, 2)} records per worker batch`,
    `  report         ${report.report.status ?? 'none'}: ${n(report.report.items)} items, ${n(report.report.scored)} scored, ${n(report.report.failed)} failed; ${n(report.report.resultItemsInTable)} results in the table; every item once: ${report.report.everyItemOnce ? 'yes' : 'NO'}`,
    '',
    table(
      [
        'function',
        'invocations',
        'cold',
        'failed',
        'max duration / timeout',
        'memory / limit',
        '/tmp / limit',
        'CPU ms mean (this machine)',
      ],
      FUNCTIONS.map((fn) => {
        const f = report.lambda[fn];
        const cpu = Object.values(f.byKind)
          .map((k) => k.cpuMs)
          .filter((c) => c !== null);
        const mean = cpu.length > 0 ? cpu.reduce((a, c) => a + c!.mean, 0) / cpu.length : null;
        return [
          fn,
          n(f.invocations),
          n(f.coldStarts),
          n(f.errors),
          `${n(f.maxDurationS, 2)} / ${f.timeoutS} s${f.durationFrom === 'replay' ? ' (replay)' : ''}`,
          `${n(f.peakMemoryMb)} / ${f.memoryMb} MB`,
          `${n(f.peakTmpMb, 1)} / ${f.tmpMb} MB`,
          n(mean, 1),
        ];
      }),
    ),
    '',
    table(
      ['key family', 'keys', 'peak WRU/s offered', 'peak RRU/s offered', 'refused'],
      Object.entries(report.keyFamilies).map(([family, f]) => [
        family,
        n(f.keys),
        n(f.peakOfferedWruPerSecond, 1),
        n(f.peakOfferedRruPerSecond, 1),
        n(f.refused),
      ]),
    ),
    '',
    table(
      [
        'projection',
        'items/s',
        'steady',
        'ramp',
        'rate set by',
        'wall',
        'AWS cost',
        'within limits',
        'limiting stage',
      ],
      (['1000000', '10000000'] as const).map((size) => {
        const p = report.projection[size];
        return [
          n(Number(size)),
          n(p.itemsPerSecond),
          n(p.steadyItemsPerSecond),
          `${n(p.rampSeconds)} s to ${n(p.peakConcurrency)}`,
          p.rateSetBy,
          p.wallSeconds === null ? '—' : `${n(p.wallSeconds)} s`,
          usd(p.awsCostUsd),
          p.withinLimits ? 'yes' : 'NO',
          p.limitingStage ?? `— (closest: ${p.closest})`,
        ];
      }),
    ),
    '',
    renderTable(
      report.goals.map(
        (g): Check => ({
          figure: g.goal,
          measured: g.measured,
          bound: '',
          target: g.target,
          ...(g.pass === null ? {} : { pass: g.pass }),
        }),
      ),
    ),
  ];
  if (report.compare) {
    const [a, b] = report.compare.items;
    lines.push(
      '',
      table(
        ['per item', n(a), n(b), 'ratio'],
        Object.entries(report.compare.perItem).map(([name, v]) => [
          name,
          fmt(v.small),
          fmt(v.large),
          v.ratio === null ? '—' : v.ratio.toFixed(3),
        ]),
      ),
    );
  }
  const m = report.model;
  lines.push(
    '',
    `  the model: ${n(m.realSeconds)} s real for ${n(m.simulatedSeconds)} simulated s; ${n(m.sdkRequests)} SDK requests (${n(m.requestsPerRealSecond)}/s); CPU ms: functions ${n(m.cpuMs.invocations)}, stand-ins ${n(m.cpuMs.aws)}, Lambda’s pollers ${n(m.cpuMs.lambda)}, the simulation ${n(m.cpuMs.none)}; ${n(m.cpuMs.notRunning)} ms of the clock taken off as the process was not running`,
  );
  return `${lines.join('\n')}\n`;
}

function fmt(x: number): string {
  if (x === 0) return '0';
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 1) return x.toFixed(3);
  return x.toPrecision(3);
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `  ${cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')}`.trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
