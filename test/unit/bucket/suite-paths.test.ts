/**
 * What a suite may read in the bucket: its own `datasets/<name>/`, the deployment's shared
 * folders, and `prompts/<path>` keys; a path that could leave them is refused as it stands.
 */
import { describe, expect, it } from 'vitest';
import {
  checkPromptPaths,
  parseDatasetPrefixes,
  SuitePathError,
  suiteDatasetKey,
} from '../../../shared/lib/layout/suite-paths.js';
import { ConfigError, InputError } from '../../../shared/model/errors.js';

const key = (path: string, allowed?: string[]) =>
  suiteDatasetKey({ name: 'demo', dataset: { path } }, allowed);

describe('suiteDatasetKey', () => {
  it("reads the suite's own folder, and a file named from outside its folder on disk", () => {
    expect(key('gold.csv')).toBe('datasets/demo/gold.csv');
    expect(key('./sub/gold.csv')).toBe('datasets/demo/sub/gold.csv');
    expect(key('datasets/demo/x/gold.csv')).toBe('datasets/demo/x/gold.csv');
    expect(key('../data/gold.csv')).toBe('datasets/demo/gold.csv');
  });

  it("refuses another suite's folder, and any other area, unless the deployment shares it", () => {
    expect(() => key('datasets/other-suite/x.csv')).toThrow(SuitePathError);
    expect(() => key('datasets/other-suite/x.csv')).toThrow(
      "dataset datasets/other-suite/x.csv is outside the suite's datasets: suite demo reads a dataset under datasets/demo/",
    );
    // A name that only starts like the suite's is another suite.
    expect(() => key('datasets/demo2/x.csv')).toThrow(SuitePathError);
    expect(() => key('datasets/x.csv')).toThrow(SuitePathError);
    expect(key('datasets/shared/x.csv', ['datasets/shared/'])).toBe('datasets/shared/x.csv');
    expect(() => key('datasets/other-suite/x.csv', ['datasets/shared/'])).toThrow(
      /under datasets\/demo\/ or under datasets\/shared\/ \(ASSAY_DATASET_PREFIXES\)/,
    );
  });

  it('refuses `..` past the start, absolute paths and empty segments, as a permanent input error', () => {
    for (const path of [
      'datasets/demo/../other/x.csv',
      'sub/../../x.csv',
      '/etc/passwd',
      'a//b.csv',
      'sub/',
      '',
      '..',
    ]) {
      let thrown: unknown;
      try {
        key(path);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, path).toBeInstanceOf(SuitePathError);
      expect(thrown, path).toBeInstanceOf(InputError);
      expect((thrown as InputError).permanent).toBe(true);
      expect((thrown as Error).message, path).toContain(`dataset.path ${JSON.stringify(path)}`);
    }
  });
});

describe('checkPromptPaths', () => {
  it('takes paths inside prompts/ and refuses `..`, absolute and empty segments', () => {
    expect(() => checkPromptPaths(['judges/edit.md', 'x.md'])).not.toThrow();
    expect(() => checkPromptPaths(['ok.md', '../suites/other.json'])).toThrow(
      /prompt path "\.\.\/suites\/other\.json" has a `\.\.` segment/,
    );
    expect(() => checkPromptPaths(['/etc/hostname'])).toThrow(/is absolute/);
    expect(() => checkPromptPaths(['a//b.md'])).toThrow(/empty segment/);
  });
});

describe('parseDatasetPrefixes', () => {
  it('reads folders under datasets/, comma-separated, adding the trailing /', () => {
    expect(parseDatasetPrefixes(undefined)).toEqual([]);
    expect(parseDatasetPrefixes(' datasets/shared , datasets/public/,')).toEqual([
      'datasets/shared/',
      'datasets/public/',
    ]);
  });

  it('refuses the whole datasets/ area, other areas and paths that leave them', () => {
    for (const text of ['datasets/', 'reports/', 'datasets/../reports', '/datasets/x']) {
      expect(() => parseDatasetPrefixes(text), text).toThrow(ConfigError);
    }
  });
});
