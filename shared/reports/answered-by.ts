/** What answered a run's items, for a comparison's header: its backends, or the outputs its dataset gave. */
export function answeredBy(run: { backends: readonly string[]; predictions?: string }): string {
  return run.predictions !== undefined
    ? `outputs: ${run.predictions}`
    : `backends: ${run.backends.join(', ')}`;
}
