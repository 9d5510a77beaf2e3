// Placeholder entry point; the real handler lands with the AWS shell (issue 3).
export const handler = async (_event: unknown): Promise<void> => {};
