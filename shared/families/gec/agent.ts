import { baseRequest, refused } from '../../family/ask.js';
import type { Solved } from '../../family/types.js';
import type { LlmProvider } from '../../model/provider.js';
import { type GecCase, render } from './case.js';
import { Bm25Index, corpusLanguage, editHints, formatRules, parseGrammarCorpus } from './grammar.js';
import { languageCode } from './labels.js';
import { askSubJudge } from './modular.js';
import type { GecOutput } from './output.js';
import { type AgentStep, parseAgentStep } from './parsers.js';
import { agentHint, type SubJudge } from './simulate.js';
import type { AgentOptions } from './suite.js';

/** The agent's tools, as its prompt lists them. */
export const AGENT_TOOLS = [
  'nonsense_detector',
  'meaning_change',
  'reward_quality',
  'grammar_rag',
  'comprehensive_analysis',
] as const;
type Tool = (typeof AGENT_TOOLS)[number];

const PROTOCOL_HINT = 'Write either "Action: tool_name(arguments)" or "Final Answer: LABEL - reason".';
const stepLimitNotice = (steps: number) =>
  `You have used all ${steps} steps. Do not call tools any more. Reply now with only:\nFinal Answer: LABEL - brief reason`;

/**
 * The agent method: the seed's text protocol. The model thinks, calls a tool with
 * `Action: tool(args)`, reads the `Observation:`, and ends with `Final Answer: LABEL - reason`.
 * Unknown tools and malformed turns get an error observation and cost a step; after
 * `maxSteps` turns one more turn asks for the answer, and without one the item fails as
 * `step_limit` with its transcript.
 */
export async function judgeAgent(c: GecCase, options: AgentOptions): Promise<Solved<GecOutput>> {
  const provider = c.ctx.backends[0]!;
  const history: { role: 'user' | 'assistant'; content: string }[] = [];
  const calls: string[] = [];
  const transcript: string[] = [];
  let problems = 0;
  // The agent prompt's instructions are the system message of every turn; its data opens the talk.
  const opening = baseRequest(c.ctx, provider, render(c, 'agent'));
  let prompt = opening.prompt;

  for (let turn = 0; turn <= options.maxSteps; turn += 1) {
    const last = turn === options.maxSteps;
    if (last) prompt = `${prompt}\n\n${stepLimitNotice(options.maxSteps)}`;
    const completion = await c.ctx.call('agent', provider, {
      ...opening,
      prompt,
      history: [...history],
      simulation: agentHint(c, provider, last ? null : turn),
    });
    transcript.push(
      `[${turn === 0 ? 'prompt' : 'user'}] ${turn === 0 ? '(agent prompt)' : prompt}`,
      `[model] ${completion.text}`,
    );
    const refusal = refused(completion);
    if (refusal) return { ok: false, failure: refusal.failure, raw: transcript.join('\n') };

    const step = parseAgentStep(completion.text, c.labels);
    const details = { steps: turn + 1, tools: calls, problems };
    if (step.kind === 'final') {
      return {
        ok: true,
        output: { label: step.label, reason: step.reason, decidedBy: provider.id },
        details,
      };
    }
    if (last) {
      return {
        ok: false,
        failure: {
          kind: 'step_limit',
          message: `no Final Answer after ${options.maxSteps} steps and one reminder`,
        },
        raw: transcript.join('\n'),
        details,
      };
    }
    const observation = await observe(c, provider, step);
    if (step.kind === 'action') calls.push(step.call);
    if (observation.problem) problems += 1;
    history.push({ role: 'user', content: prompt }, { role: 'assistant', content: completion.text });
    prompt = `Observation: ${observation.text}`;
  }
  throw new Error('unreachable: the loop returns on its last turn');
}

async function observe(
  c: GecCase,
  provider: LlmProvider,
  step: Exclude<AgentStep, { kind: 'final' }>,
): Promise<{ text: string; problem?: boolean }> {
  if (step.kind === 'malformed') return { text: `Error: ${step.problem}. ${PROTOCOL_HINT}`, problem: true };
  if (!(AGENT_TOOLS as readonly string[]).includes(step.tool)) {
    return {
      text: `Error: unknown tool ${step.tool}. Available tools: ${AGENT_TOOLS.join(', ')}.`,
      problem: true,
    };
  }
  return { text: await runTool(c, provider, step.tool as Tool, step.args) };
}

/** The seed's prompt shows argument names; a model that copies them means the item's text. */
const PLACEHOLDER_ARG =
  /^(original|suggested|text|suggested text here|original text|suggested text|language)$/i;

function argOr(args: readonly string[], index: number, fallback: string): string {
  const value = args[index]?.trim();
  return value && !PLACEHOLDER_ARG.test(value) ? value : fallback;
}

async function runTool(c: GecCase, provider: LlmProvider, tool: Tool, args: string[]): Promise<string> {
  const { src = '', tgt = '' } = c.item.input;
  const subJudge = async (judge: SubJudge, vars: Record<string, string>) => {
    const answer = await askSubJudge(c, judge, `tool:${tool}`, provider, vars);
    if (!answer.ok) return `the ${judge} check failed (${answer.failure.message})`;
    const { reason, ...values } = answer.value;
    const shown = Object.entries(values).map(([k, v]) => `${k}=${v}`);
    return `${shown.join(', ')}${reason ? ` (${reason})` : ''}`;
  };
  switch (tool) {
    case 'nonsense_detector':
      return subJudge('nonsense', { text: argOr(args, 0, tgt) });
    case 'meaning_change':
      return subJudge('meaning', { original: argOr(args, 0, src), suggested: argOr(args, 1, tgt) });
    case 'reward_quality':
      return subJudge('quality', { original: argOr(args, 0, src), suggested: argOr(args, 1, tgt) });
    case 'grammar_rag':
      return grammarRules(c, argOr(args, 0, c.vars.edit!), argOr(args, 1, c.lang), 3);
    case 'comprehensive_analysis': {
      const pair = { original: argOr(args, 0, src), suggested: argOr(args, 1, tgt) };
      const [nonsense, meaning, quality] = await Promise.all([
        subJudge('nonsense', { text: pair.suggested }),
        subJudge('meaning', pair),
        subJudge('quality', pair),
      ]);
      const rules = grammarRules(c, `${pair.original} ${pair.suggested}`, argOr(args, 2, c.lang), 2);
      return `nonsense: ${nonsense}\nmeaning change: ${meaning}\nquality: ${quality}\ngrammar rules:\n${rules}`;
    }
  }
}

/** Indexes by corpus content hash: built once per container, rebuilt when a corpus changes. */
const indexes = new Map<string, Bm25Index>();

function grammarRules(c: GecCase, query: string, language: string, k: number): string {
  const code = corpusLanguage(languageCode(language));
  const path = c.ctx.paths[`grammar.${code}`];
  const snapshot = path === undefined ? undefined : c.ctx.prompts[path];
  if (!path || !snapshot) return `No grammar corpus for language ${language} in this suite.`;
  let index = indexes.get(snapshot.hash);
  if (!index) {
    index = new Bm25Index(parseGrammarCorpus(snapshot.text, path));
    indexes.set(snapshot.hash, index);
  }
  return formatRules(index.search(`${query} ${editHints(c.spans)}`, k), language);
}
