/**
 * A Secrets Manager holding a few secrets, for the composition root's provider keys
 * (GetSecretValue only; JSON 1.1, `x-amz-target: secretsmanager.GetSecretValue`).
 */
import { type Clock, jsonResponse, type ServiceResponse, type SimRequest, type SimService } from './http.js';

export class SimSecrets implements SimService {
  private readonly secrets = new Map<string, string>();
  requests = 0;

  constructor(
    private readonly clock: Clock,
    private readonly latencyMs = 15,
  ) {}

  /** Stores a secret's string under its ARN (or name). */
  set(id: string, value: string): void {
    this.secrets.set(id, value);
  }

  async serve(request: SimRequest): Promise<ServiceResponse> {
    this.requests += 1;
    await this.clock.sleep(this.latencyMs);
    const target = request.headers['x-amz-target'] ?? '';
    const input = JSON.parse(request.body.toString('utf8') || '{}') as { SecretId?: string };
    if (target !== 'secretsmanager.GetSecretValue') {
      return jsonResponse(
        400,
        {
          __type: 'InvalidRequestException',
          Message: `${target} is not modelled by the simulated Secrets Manager`,
        },
        '1.1',
      );
    }
    const id = String(input.SecretId ?? '');
    const value = this.secrets.get(id);
    if (value === undefined) {
      return jsonResponse(
        400,
        { __type: 'ResourceNotFoundException', Message: "Secrets Manager can't find the specified secret." },
        '1.1',
      );
    }
    return jsonResponse(
      200,
      {
        ARN: id,
        Name: id.split(':').pop(),
        SecretString: value,
        VersionId: 'simulated',
        VersionStages: ['AWSCURRENT'],
        CreatedDate: this.clock.now() / 1000,
      },
      '1.1',
    );
  }
}
