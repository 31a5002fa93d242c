/**
 * The spec writes options Go-style with one dash (`-email a@b -scope x -scope y`);
 * node's parseArgs would read `-email` as clustered short flags. One dash and a word
 * becomes two dashes; `--email` passes through.
 */
export function normaliseArgv(argv: readonly string[]): string[] {
  return argv.map((arg) => (/^-[a-zA-Z][\w-]+(=.*)?$/.test(arg) ? `-${arg}` : arg));
}

/** Every value of a repeatable option (`--scope a --scope b`, `--scope=c`), in order. */
export function repeatedOption(argv: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] as string;
    if (arg === `--${name}`) {
      const value = argv[i + 1];
      if (value !== undefined) values.push(value);
      i += 1;
    } else if (arg.startsWith(`--${name}=`)) {
      values.push(arg.slice(name.length + 3));
    }
  }
  return values;
}
