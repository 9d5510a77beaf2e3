/**
 * Loaded into a child node process (`node --import <this> …`) by the hostile-file tests and
 * bench: at exit, writes the process's peak resident memory (bytes) to the file named by
 * ASSAY_PEAK_RSS_FILE, so that memory outside the JS heap (buffers, WebAssembly) counts too.
 */
import { writeFileSync } from 'node:fs';

const target = process.env.ASSAY_PEAK_RSS_FILE;
if (target)
  process.on('exit', () => {
    writeFileSync(target, String(process.resourceUsage().maxRSS * 1024));
  });
