import { z } from 'zod';
import { parseAnswer } from '../../family/answer.js';
import { type Asked, ask, baseRequest, failedSolve } from '../../family/ask.js';
import type { Solved } from '../../family/types.js';
import type { LlmProvider } from '../../model/provider.js';
import { type GecCase, render } from './case.js';
import { classify, labelField, perLabelSet, type Verdict, verdictJsonSchema } from './classify.js';
import type { GecOutput } from './output.js';
import { type RiskFlag, riskFlags } from './router.js';
import { routerHint } from './simulate.js';
import type { EscalationOptions } from './suite.js';

/** One step of an item's route through the backends. */
export interface RouteStep {
  stage: 'small' | 'expert' | 'finalizer';
  backend: string;
  label: string;
}

export type EscalationDetails = {
  router: EscalationOptions['router'];
  flags: string[];
  escalated: boolean;
  finalized: boolean;
  path: RouteStep[];
};

/**
 * The escalation method. The small model (first backend) answers; the router escalates when its
 * label or a risk flag is in the suite's sets. Experts (the next backends, small → large) are
 * asked in turn until one agrees with an earlier answer; if none does, the last backend acts
 * as finalizer and sees every answer. So a finalizer runs only on disagreement, and with two
 * backends the expert is also the finalizer. A finalizer that fails leaves the answer of the
 * largest model that gave one.
 */
export async function judgeEscalation(c: GecCase, options: EscalationOptions): Promise<Solved<GecOutput>> {
  const backends = c.ctx.backends;
  const small = backends[0]!;
  const first: Asked<Verdict & Partial<RoutedVerdict>> =
    options.router === 'llm' ? await routeWithLlm(c, small) : await classify(c, 'small', small);
  const path: RouteStep[] = [
    { stage: 'small', backend: small.id, label: first.ok ? first.value.label : 'Error' },
  ];
  const smallLabel = path[0]!.label;

  let flags: string[];
  let escalate: boolean;
  if (options.router === 'llm') {
    flags = first.ok ? (first.value.risk ?? []) : [];
    escalate = !first.ok || first.value.escalate === true;
  } else {
    const computed: RiskFlag[] = riskFlags(c.spans, smallLabel);
    flags = computed;
    escalate =
      (options.escalateLabels as readonly string[]).includes(smallLabel) ||
      computed.some((flag) => options.escalateFlags.includes(flag));
  }
  const details = (finalized: boolean): EscalationDetails => ({
    router: options.router,
    flags,
    escalated: escalate,
    finalized,
    path,
  });
  if (!escalate) {
    return first.ok
      ? verdictOutcome(first.value, `small ${small.id}`, details(false))
      : failedSolve(first, details(false));
  }

  const answers: { backend: string; verdict: Verdict }[] = first.ok
    ? [{ backend: small.id, verdict: first.value }]
    : [];
  let lastFailure = first.ok ? undefined : first;
  const experts = backends.length > 2 ? backends.slice(1, -1) : backends.slice(1);
  for (const expert of experts) {
    const answer = await classify(c, 'expert', expert);
    path.push({ stage: 'expert', backend: expert.id, label: answer.ok ? answer.value.label : 'Error' });
    if (!answer.ok) {
      lastFailure = answer;
      continue;
    }
    if (answers.some((a) => a.verdict.label === answer.value.label))
      return verdictOutcome(answer.value, `expert ${expert.id}`, details(false));
    answers.push({ backend: expert.id, verdict: answer.value });
  }
  // Nothing to disagree about: every other stage failed.
  if (answers.length <= 1) {
    const only = answers[0];
    if (only) return verdictOutcome(only.verdict, `only answer ${only.backend}`, details(false));
    return failedSolve(lastFailure!, details(false));
  }

  const finalizer = backends[backends.length - 1]!;
  const candidates = answers
    .map((a) => `- ${a.backend}: ${a.verdict.label} (${a.verdict.reason || 'no reason'})`)
    .join('\n');
  const final = await classify(c, 'finalizer', finalizer, 'finalizer', { candidates });
  path.push({ stage: 'finalizer', backend: finalizer.id, label: final.ok ? final.value.label : 'Error' });
  if (final.ok) return verdictOutcome(final.value, `finalizer ${finalizer.id}`, details(true));
  // The answers already paid for are not thrown away: the largest model that answered decides.
  const largest = answers[answers.length - 1]!;
  return verdictOutcome(
    { ...largest.verdict, reason: `${largest.verdict.reason} (finalizer failed: ${final.failure.message})` },
    `${largest.backend} (finalizer failed)`,
    details(true),
  );
}

function verdictOutcome(verdict: Verdict, decidedBy: string, details: EscalationDetails): Solved<GecOutput> {
  return { ok: true, output: { label: verdict.label, reason: verdict.reason, decidedBy }, details };
}

interface RoutedVerdict extends Verdict {
  escalate: boolean;
  risk: string[];
}

const routedVerdictSchema = perLabelSet((labels) =>
  z.object({
    label: labelField(labels),
    reason: z.string().default(''),
    escalate: z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]),
    risk: z.array(z.string()).default([]),
  }),
);

/** The optional LLM router: one call that classifies and says whether to escalate. */
function routeWithLlm(c: GecCase, small: LlmProvider): Promise<Asked<RoutedVerdict>> {
  const schema = routedVerdictSchema(c.labels);
  const jsonSchema = verdictJsonSchema(c.labels, {
    escalate: { type: 'boolean' },
    risk: { type: 'array', items: { type: 'string' } },
  });
  return ask(
    c.ctx,
    'small',
    small,
    {
      ...baseRequest(c.ctx, small, render(c, 'router')),
      jsonSchema: c.ctx.suite.params.structuredOutput ? jsonSchema : undefined,
      simulation: routerHint(c, small),
    },
    (text) => parseAnswer(text, schema),
    (problem) => render(c, 'repair', { problem }),
  );
}
