import { useId } from 'preact/hooks';

/**
 * Key figures side by side, each a figure named by its label whose text is the value alone, so that
 * assistive technology (and tests) read `Things` as `10000`.
 */
export function Figures(props: { label: string; figures: { name: string; value: string | undefined }[] }) {
  return (
    <ul class="figures" aria-label={props.label}>
      {props.figures.map((f) => (
        <FigureCard key={f.name} name={f.name} value={f.value} />
      ))}
    </ul>
  );
}

function FigureCard({ name, value }: { name: string; value: string | undefined }) {
  const id = useId();
  return (
    <li class="figure-card">
      <span id={id} class="figure-name">
        {name}
      </span>
      <figure aria-labelledby={id} aria-busy={value === undefined}>
        {value ?? '…'}
      </figure>
    </li>
  );
}
