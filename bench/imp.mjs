const t0 = performance.now();
await import(
  process.argv[2].startsWith('.')
    ? new URL(process.argv[2], `file://${process.cwd()}/`).href
    : process.argv[2]
);
console.log(process.argv[2], Math.round(performance.now() - t0), 'ms');
