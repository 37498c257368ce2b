"""Text utilities at the bottom of the package: the keyword tokenizer (jieba, stopwords, labels
such as 第三条, months, number variants) and Chinese numerals. They import nothing else of
rag_app, so that analysis, chunking, ingestion, retrieval and the answer step can all use them
without one of those packages sitting above another."""
