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
    `Capacity model — ${n(report.items)} items, worker concurrency ${n(s.workerConcurrency)}, simulated LLM ${n(s.llmMs)} ms, seed ${s.seed}`,
    `  throughput     ${n(report.itemsPerSecond)} items/s sustained (5 %→95 % of results, simulated); wall ${n(report.wallSeconds, 1)} s (upload → report.json)`,
    `  set by         ${report.stages.limitingStage}`,
    `  hottest key    ${report.hottestKey ? `${report.hottestKey.key}: ${n(report.hottestKey.peakWruPerSecond)} WRU/s, ${n(report.hottestKey.peakRruPerSecond)} RRU/s` : '—'}; throttled ${n(report.throttled)}; table peak ${n(report.dynamo.tablePeakWruPerSecond)} WRU/s`,
    `  AWS per 1M     ${usd(cost.total)} (DynamoDB ${usd(cost.dynamodb)} + storage ${usd(cost.dynamodbStorage)}, Lambda ${usd(cost.lambda)}, SQS ${usd(cost.sqs)}, S3 ${usd(cost.s3)}, logs ${usd(cost.logs)}, Secrets ${usd(cost.secretsManager)})`,
    `  LLM per 1M     ${report.llmCostPer1MUsd === null ? '—' : usd(report.llmCostPer1MUsd)} (simulated calls priced as gpt-4o-mini)${report.llmCostPer1MUsd ? `; AWS is ${n((100 * cost.total) / report.llmCostPer1MUsd, 1)} % of it` : ''}`,
    `  per item       ${n(report.perItem.dynamoWriteUnits, 2)} WRU, ${n(report.perItem.dynamoReadUnits, 2)} RRU, ${n(report.perItem.sqsBilledRequests, 2)} SQS requests, ${n(report.perItem.logBytes)} log bytes`,
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
      ['projection', 'items/s', 'rate set by', 'wall', 'AWS cost', 'within limits', 'limiting stage'],
      (['1000000', '10000000'] as const).map((size) => {
        const p = report.projection[size];
        return [
          n(Number(size)),
          n(p.itemsPerSecond),
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
