// Preloaded into a measured process (`node --import <this file> …`) by bench/memory.ts: when
// the process exits, its peak resident set (process.resourceUsage().maxRSS, in KB) is written
// to the file named by ASSAY_MAXRSS_FILE. Read at exit, it is exact, where sampling /proc from
// outside can miss a late peak.
import { writeFileSync } from 'node:fs';

const file = process.env.ASSAY_MAXRSS_FILE;
if (file) {
  process.on('exit', () => {
    writeFileSync(file, `${process.resourceUsage().maxRSS}\n`);
  });
}
