import type {
  Completion,
  CompletionRequest,
  FinishReason,
  LlmProvider,
} from '../../shared/model/provider.js';

export type ScriptedAnswer = string | Error | { text: string; finishReason: FinishReason };

/** A test double that answers from a script, one answer per call. Never used outside tests. */
export class ScriptedProvider implements LlmProvider {
  readonly simulated = false;
  readonly requests: CompletionRequest[] = [];
  constructor(
    readonly id: string,
    private readonly answer: (request: CompletionRequest, n: number) => ScriptedAnswer,
  ) {}
  async complete(request: CompletionRequest): Promise<Completion> {
    this.requests.push(request);
    const answer = this.answer(request, this.requests.length);
    if (answer instanceof Error) throw answer;
    const { text, finishReason } =
      typeof answer === 'string' ? { text: answer, finishReason: 'stop' as const } : answer;
    return {
      text,
      finishReason,
      usage: { input: 100, output: 10, cached: 0 },
      costUsd: 0.001,
      latencyMs: 5,
      cached: false,
      simulated: false,
      providerId: this.id,
    };
  }
}
