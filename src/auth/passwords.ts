import { hash, verify } from '@node-rs/argon2';

/**
 * argon2id with OWASP's first recommended setting (19 MiB, 2 passes, 1 lane). The PHC
 * string records the parameters, so raising them later still verifies older hashes.
 */
const params = { memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 1024;

export function hashPassword(password: string): Promise<string> {
  return hash(password, params);
}

/** Constant-time comparison happens inside argon2's verify. */
export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  try {
    return await verify(phc, password);
  } catch {
    return false;
  }
}
