import type { Suite } from '../core/suite.js';
import { placeholders } from '../prompts/prompts.js';
import { gecTask } from './gec/task.js';
import type { Task } from './types.js';

/**
 * Every task family, by the name suites use. `verifyPrompts` runs at load time: a method whose
 * prompt file is missing, or a prompt with a placeholder nobody fills, fails before any call.
 */
const TASKS: Record<Suite['task'], Task> = { gec: gecTask };

export class TaskRegistryError extends Error {
  override readonly name = 'TaskRegistryError';
}

export function taskFor(suite: Pick<Suite, 'task'>): Task {
  const task = TASKS[suite.task];
  if (!task) throw new TaskRegistryError(`unknown task ${suite.task}`);
  return task;
}

export function allTasks(): Task[] {
  return Object.values(TASKS);
}

/** Checks that each role's prompt text exists and uses only placeholders the task fills. */
export function verifyPrompts(
  task: Task,
  paths: Record<string, string>,
  texts: Record<string, string | undefined>,
) {
  for (const [role, path] of Object.entries(paths)) {
    const family = role in task.placeholders ? role : role.split('.')[0]!;
    const allowed = task.placeholders[family];
    if (allowed === undefined)
      throw new TaskRegistryError(`${task.name}: unknown prompt role ${role} (${path})`);
    const text = texts[path];
    if (text === undefined)
      throw new TaskRegistryError(`${task.name}: prompt file for ${role} not found: ${path}`);
    if (allowed === null) continue;
    const unknown = [...placeholders(text)].filter((name) => !allowed.includes(name));
    if (unknown.length > 0) {
      throw new TaskRegistryError(
        `${path}: unknown placeholder(s) ${unknown.map((n) => `{${n}}`).join(', ')}; ${role} prompts may use ${allowed.map((n) => `{${n}}`).join(', ')}`,
      );
    }
  }
}
