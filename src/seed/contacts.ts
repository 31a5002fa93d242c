import { createContact } from '../contacts/service.js';
import type { IdentityInput } from '../contacts/channels.js';
import type { SeedStep } from './index.js';

// Demo contacts: people at small businesses a team might sell to or work with. Addresses
// use the reserved `.example` domain and phone numbers the ranges kept for fiction (UK
// 07700 900xxx and 020 7946 0xxx, US 555-01xx), so none reaches a real person.

/** name, work address, then optional phone and second address. */
type DemoContact = [name: string, email: string, phone?: string, otherEmail?: string];

export const DEMO_CONTACTS: readonly DemoContact[] = [
  ['Lucía Fernández', 'lucia.fernandez@hortaverde.example', '+44 7700 900101'],
  ['Marc Puig', 'marc@puig-arquitectes.example', '+44 20 7946 0102'],
  ['Sofía Martín', 'sofia.martin@clinica-sol.example'],
  ['Javier Ortega', 'j.ortega@ortega-transportes.example', '+44 7700 900104'],
  ['Elena Navarro', 'elena@navarro-legal.example', undefined, 'elena.navarro@mail.example'],
  ['Pablo Ruiz', 'pablo.ruiz@ruiz-imprenta.example', '+44 7700 900106'],
  ['Carmen Vidal', 'carmen.vidal@vidal-catering.example', '+44 20 7946 0107'],
  ['Andrés Molina', 'andres@molina-bikes.example'],
  ['Priya Shah', 'priya.shah@northwind.example', '+44 7700 900109'],
  ['Tom Becker', 'tom.becker@becker-logistik.example', '+1 202-555-0110'],
  ['Aisha Okafor', 'aisha@okafor-design.example', '+44 7700 900111', 'aisha.okafor@mail.example'],
  ['Daniel Kim', 'daniel.kim@brightdesk.example'],
  ['Hannah Schmidt', 'h.schmidt@schmidt-bau.example', '+44 20 7946 0113'],
  ['Oliver Hughes', 'oliver@hughes-accountants.example', '+44 7700 900114'],
  ['Chloé Dubois', 'chloe.dubois@atelier-dubois.example'],
  ['Mateo Rossi', 'mateo@rossi-caffe.example', '+44 7700 900116'],
  ['Grace Liu', 'grace.liu@lotus-tea.example', '+1 202-555-0117'],
  ['Samuel Adeyemi', 'samuel@adeyemi-solar.example', '+44 7700 900118'],
  ['Isabel Costa', 'isabel.costa@costa-imoveis.example'],
  ['Noah Williams', 'noah.williams@harbourline.example', '+1 202-555-0120'],
  ['Emma Johansson', 'emma@nordic-knits.example', '+44 7700 900121'],
  ['Raúl Jiménez', 'raul.jimenez@jimenez-fontaneria.example', '+44 7700 900122'],
  ['Fatima Zahra', 'fatima@atlas-travel.example', undefined, 'fatima.zahra@mail.example'],
  ['Lukas Novak', 'lukas.novak@novak-print.example', '+44 20 7946 0124'],
  ['Olivia Brown', 'olivia@brown-florists.example', '+44 7700 900125'],
  ['Hugo Lefèvre', 'hugo.lefevre@lefevre-vins.example'],
  ['Mia Fischer', 'mia.fischer@fischer-optik.example', '+44 7700 900127'],
  ['Diego Herrera', 'diego@herrera-motors.example', '+1 202-555-0128'],
  ['Zoe Papadopoulos', 'zoe@aegean-foods.example', '+44 7700 900129'],
  ['Ethan Clarke', 'ethan.clarke@clarke-joinery.example'],
  ['Nadia Petrova', 'nadia.petrova@petrova-translations.example', '+44 7700 900131'],
  ['Jorge Silva', 'jorge.silva@silva-pescados.example', '+44 20 7946 0132'],
  ['Amelia Turner', 'amelia@turner-vets.example', '+44 7700 900133'],
  ['Yusuf Demir', 'yusuf@demir-textiles.example', undefined, 'yusuf.demir@mail.example'],
  ['Laura Gómez', 'laura.gomez@gomez-dental.example', '+44 7700 900135'],
  ['Ben Carter', 'ben@carter-coffee.example', '+1 202-555-0136'],
];

function identitiesOf([name, email, phone, otherEmail]: DemoContact): IdentityInput[] {
  const identities: IdentityInput[] = [{ channel: 'email', identifier: email, displayName: name }];
  if (phone) identities.push({ channel: 'phone', identifier: phone, displayName: name });
  if (otherEmail) {
    identities.push({
      channel: 'email',
      identifier: otherEmail,
      displayName: `${name} (personal)`,
    });
  }
  return identities;
}

/** The contacts, half added by the admin and half by the member, through createContact. */
export const contactsStep: SeedStep = {
  name: 'contacts',
  async run({ as, admin, member }) {
    let identities = 0;
    for (const [index, contact] of DEMO_CONTACTS.entries()) {
      const ctx = as(index % 2 === 0 ? admin : member);
      const added = identitiesOf(contact);
      await createContact(ctx, { name: contact[0], identities: added });
      identities += added.length;
    }
    return { contacts: DEMO_CONTACTS.length, identities };
  },
};
