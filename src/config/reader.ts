import * as v from 'valibot';
import type { Schema } from './schemas.js';
import type { ConfigGroup, ConfigProblem, Env } from './types.js';

/** Variables whose values never appear in a problem message. */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  'SVC_DATABASE_URL',
  'SVC_DATABASE_REPLICA_URLS',
  'SVC_SMTP_PASSWORD',
  'SVC_CHAT_VERIFY_TOKEN',
  'SVC_CHAT_APP_SECRET',
  'SVC_CHAT_ACCESS_TOKEN',
  'SVC_CHAT_CREDENTIALS_KEY',
  // Collectors take an API key in a header.
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
]);

/** Reads variables for the loader, collecting every problem instead of stopping. */
export class EnvReader {
  readonly problems: ConfigProblem[] = [];

  constructor(private readonly env: Env) {}

  /** The variable's text; an empty string counts as unset (SPEC: "unset" defaults). */
  text(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  isSet(name: string): boolean {
    return this.text(name) !== undefined;
  }

  refused(name: string): boolean {
    return this.problems.some((p) => p.variable === name);
  }

  /**
   * Records a problem, the one way any is made: `<variable> <rule>`, then the value (or the
   * refused part of it) quoted as `(got "...")` when `shown` is given and not secret. The
   * rule completes a sentence that starts with the variable name, as a parser's refusal does.
   */
  refuse(variable: string, group: ConfigGroup, rule: string, shown?: string): void {
    const quoted =
      shown === undefined || SECRET_VARIABLES.has(variable)
        ? ''
        : ` (got ${JSON.stringify(shown)})`;
    this.problems.push({ variable, group, message: `${variable} ${rule}${quoted}` });
  }

  group(group: ConfigGroup): GroupReader {
    return new GroupReader(this, group);
  }

  /** Parses a set variable; returns undefined, after recording problems, when refused. */
  parse<T>(name: string, group: ConfigGroup, schema: Schema<T>): T | undefined {
    const text = this.text(name);
    if (text === undefined) return undefined;
    const result = v.safeParse(schema, text);
    if (result.success) return result.output;
    for (const issue of result.issues) {
      this.refuse(name, group, issue.message, typeof issue.input === 'string' ? issue.input : text);
    }
    return undefined;
  }
}

/** An EnvReader bound to one group, so group readers state it once. */
export class GroupReader {
  constructor(
    readonly env: EnvReader,
    readonly group: ConfigGroup,
  ) {}

  /** The value, or the default when unset or refused. The default is written as text. */
  read<T>(name: string, schema: Schema<T>, defaultText: string): T {
    return this.env.parse(name, this.group, schema) ?? this.parseDefault(name, schema, defaultText);
  }

  /** A default, parsed by the variable's own schema so it is spelled as the spec spells it. */
  parseDefault<T>(name: string, schema: Schema<T>, defaultText: string): T {
    const parsed = v.safeParse(schema, defaultText);
    if (!parsed.success) throw new Error(`the default ${defaultText} of ${name} is invalid`);
    return parsed.output;
  }

  /** The value, or null when unset or refused. */
  optional<T>(name: string, schema: Schema<T>): T | null {
    return this.env.parse(name, this.group, schema) ?? null;
  }

  /** See EnvReader.refuse: `<name> <rule>`, quoting `shown` unless the variable is secret. */
  refuse(name: string, rule: string, shown?: string): void {
    this.env.refuse(name, this.group, rule, shown);
  }

  /** True when none of the variables was refused, so a rule tying them is worth checking. */
  parsed(...names: string[]): boolean {
    return names.every((name) => !this.env.refused(name));
  }

  /**
   * Refuses a value that breaks a rule tying it to another variable. Such rules apply to
   * defaults too (a cap lowered below a default), so an unset one is named as the default.
   */
  refuseRelation(name: string, rule: string, defaultText: string): void {
    const written = this.env.text(name);
    if (written !== undefined) this.refuse(name, rule, written);
    else this.refuse(name, `${rule}; set it, since its default ${defaultText} breaks this`);
  }
}
