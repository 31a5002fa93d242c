// Replaced shortly by the template-database setup.
export default async function globalSetup(): Promise<void> {}
