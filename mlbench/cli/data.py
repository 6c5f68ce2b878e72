"""`mlbench data`: ImageNet- or BERT-format records from bundled real data."""
from mlbench.cli.common import EXIT_OK


def data_flags(parser):
    parser.add_argument("kind", choices=("imagenet", "bert"),
                        help="imagenet: JPEG TFRecords of bundled real images; bert: MLPerf-"
                             "format pretraining records of the standard library's text.")
    parser.add_argument("--output_dir", required=True, help="where the records go.")
    parser.add_argument("--source", default="digits", choices=("digits", "mnist", "photos"),
                        help="imagenet: which bundled real images.")
    parser.add_argument("--image_size", type=int, default=32, help="imagenet: image side.")
    parser.add_argument("--num_shards", type=int, default=2, help="train shards.")
    parser.add_argument("--seq_length", type=int, default=128, help="bert: tokens per sequence.")
    parser.add_argument("--max_predictions", type=int, default=20,
                        help="bert: masked tokens per sequence.")
    parser.add_argument("--wordpiece_vocab_size", type=int, default=2000,
                        help="bert: target vocabulary size.")
    parser.add_argument("--duplicates", type=int, default=5,
                        help="bert: dupe factor (maskings per text).")


def run_data(args):
    if args.kind == "imagenet":
        from mlbench.data.writers import write_bundled_imagenet
        train, evals = write_bundled_imagenet(args.output_dir, args.source, args.image_size,
                                              args.num_shards)
        print(f"wrote {len(train)} train and {len(evals)} validation shards to "
              f"{args.output_dir}")
        return EXIT_OK
    from mlbench.data.bert_writer import write_bert_pretraining
    out = write_bert_pretraining(args.output_dir, vocab_size=args.wordpiece_vocab_size,
                                 seq_length=args.seq_length, max_predictions=args.max_predictions,
                                 dupe_factor=args.duplicates, num_shards=args.num_shards)
    print(f"wrote {out['counts']} instances and {out['vocab']} to {args.output_dir}")
    return EXIT_OK
