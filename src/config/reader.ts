import * as v from 'valibot';
import type { ConfigGroup, ConfigProblem, Env } from '../config.js';
import type { Parsed } from './parsed.js';

/** A valibot schema from one variable's text to its value. */
export type Schema<T> = v.GenericSchema<string, T>;

/**
 * Wraps a pure helper as a valibot schema. Each refusal becomes an issue whose `input`
 * is the part of the value to quote (a list's entry, or the whole value).
 */
export function fromParser<T>(parse: (text: string) => Parsed<T>): Schema<T> {
  return v.pipe(
    v.string(),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const result = parse(dataset.value);
      if (result.ok) return result.value;
      for (const refusal of result.refusals) {
        addIssue({ message: refusal.message, input: refusal.got ?? dataset.value });
      }
      return NEVER;
    }),
  );
}

/** Variables whose values never appear in a problem message. */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set([
  'SVC_DATABASE_URL',
  'SVC_SMTP_PASSWORD',
  'SVC_CHAT_VERIFY_TOKEN',
  'SVC_CHAT_APP_SECRET',
  'SVC_CHAT_ACCESS_TOKEN',
  'SVC_CHAT_CREDENTIALS_KEY',
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

  /** Records a problem; the message must start with the variable name. */
  refuse(variable: string, group: ConfigGroup, message: string): void {
    this.problems.push({ variable, group, message });
  }

  /** Records a broken rule for a value that parsed, quoting it unless it is secret. */
  refuseValue(variable: string, group: ConfigGroup, rule: string, shown?: string): void {
    this.refuse(variable, group, `${variable} ${rule}${this.quote(variable, shown)}`);
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
      const shown = typeof issue.input === 'string' ? issue.input : text;
      this.refuse(name, group, `${name} ${issue.message}${this.quote(name, shown)}`);
    }
    return undefined;
  }

  private quote(name: string, shown: string | undefined): string {
    if (shown === undefined || SECRET_VARIABLES.has(name)) return '';
    return ` (got ${JSON.stringify(shown)})`;
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

  refuse(name: string, message: string): void {
    this.env.refuse(name, this.group, message);
  }

  refuseValue(name: string, rule: string, shown?: string): void {
    this.env.refuseValue(name, this.group, rule, shown);
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
    if (written !== undefined) this.refuseValue(name, rule, written);
    else this.refuse(name, `${name} ${rule}; set it, since its default ${defaultText} breaks this`);
  }
}
